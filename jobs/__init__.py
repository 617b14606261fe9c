"""Job scripts for the lessons, and the tools around them.

The checker is a pipeline of stages: `script` (sbatch text -> JobScript), `resources`
(JobScript -> the numbers it asks for), `launch` (its commands -> the Python it starts, with the
counts `shell_vars` reads from the script's variables), `follow` (reads those scripts with
jobs.workers_reader: processes and loader workers), `measured` (a memory need from a kit
profile or sacct), `rules` (a table of conditions -> findings); `cli` prints them. `facts` holds
the plain data the later stages hand on (`Started`, `Need`), below them all, so every import
points down the pipeline. `site` reads jobs/site.env for submission, `gather` turns a sweep
array's files into one table, and `submit` is the submitit launcher. The sbatch templates are in
jobs/templates/ and share jobs/lib/job.sh.
"""
