"""Lesson 1's data and speed helpers, imported by `mnist_classify.py` and the later lessons.

- `data`: MNIST read, cut, augmented and put in a seeded order;
- `synthetic`: the offline generated digit set, in MNIST's IDX format;
- `real`: MNIST's real t10k digits (shipped in `mnist-t10k/`) split for accuracy checks;
- `gpu_resident`, `graphed_step`, `recipes`: lesson 4's fast path (data on the GPU, CUDA graphs,
  the large-batch learning-rate rule);
- `run_context`: the context block every lesson script prints first;
- `tensorboard_log`: the TensorBoard curves of lessons 5-6.
"""
