"""Data and model code of q_2_main.py, kept in a package beside it as a project grows."""
