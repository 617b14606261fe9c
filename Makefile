# The two quickstart commands live here:
#   make demo   install the kit into .venv and profile a short MNIST run on generated digits, then print the advice
#   make test   install the test tools, start the local Slurm sandbox, run the whole test suite
# Everything else is a building block of those two.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
DEMO_DIR ?= runs/demo

.PHONY: demo test install install-dev system-deps slurm-up slurm-down slurm-check clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The ordinary PyPI torch and torchvision (CUDA builds; they also run on a CPU-only machine).
install: $(PY)
	$(PY) -m pip install -q -e .

install-dev: $(PY)
	$(PY) -m pip install -q -e ".[dev]"

demo: install
	$(PY) -m profiling run --output-dir $(DEMO_DIR) -- mnist_classify.py --synthetic --epochs 1 --train-samples 6000 --test-samples 1000

# Debian packages the tests need beyond Slurm itself (Slurm comes with slurm-up).
system-deps:
	bash jobs/sandbox/apt-install.sh chromium

slurm-up:
	bash jobs/sandbox/slurm-up.sh

slurm-down:
	bash jobs/sandbox/slurm-down.sh

test: install-dev system-deps slurm-up
	$(PY) -m pytest

clean:
	rm -rf runs .pytest_cache .hypothesis
