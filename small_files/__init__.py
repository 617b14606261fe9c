"""Lesson 09 (after gpufs): an image folder of many small JPEGs, the same samples grouped into
WebDataset tar shards, and the tools to read both cold, warm, locally and over sshfs.

Stages, one module each: generate (write the folder) -> shards (group it, check it, load it)
-> cache / remote (evict the page cache, serve a folder over sshfs) -> readtime (measure what a
worker spends opening and reading files against decoding them). The trainer itself is
`train.py` (lesson 1's script with ResNet-18), and its per-image work is `transforms.py`.
"""
