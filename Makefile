# The two quickstart commands:
#   make demo   install the kit into .venv, profile a short MNIST run on generated digits, print the advice
#   make test   install the test tools and system packages, start the local Slurm sandbox, run every test
# The other targets are their building blocks. `make test PYTEST_ARGS="-k sandbox"` runs a subset.

PYTHON      ?= python3
VENV        ?= .venv
PY          := $(VENV)/bin/python
DEMO_DIR    ?= runs/demo
PYTEST_ARGS ?=
# Two test workers (pytest-xdist): the tests that use the Slurm sandbox run in order on one of them
# (tests/conftest.py groups them), the rest on the other. XDIST= runs everything in one process.
XDIST       ?= -n 2 --dist loadgroup
# `make slurm-up NODES=2` starts the two-node cluster beside the one-node sandbox (docs/sandbox.md).
NODES       ?= 1
SANDBOX_UP   = $(if $(filter 2,$(NODES)),two-node-up.sh,$(if $(filter 1,$(NODES)),slurm-up.sh,$(error NODES must be 1 or 2, got '$(NODES)')))
SANDBOX_DOWN = $(if $(filter 2,$(NODES)),two-node-down.sh,$(if $(filter 1,$(NODES)),slurm-down.sh,$(error NODES must be 1 or 2, got '$(NODES)')))
# System packages and daemons need root; a learner's laptop gets sudo.
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test lint install install-dev system-deps slurm-up slurm-down clean

# Debian's python3 can only make a venv once python3-venv is installed.
$(PY):
	$(PYTHON) -m venv $(VENV) 2>/dev/null || { $(SUDO) bash jobs/sandbox/apt-install.sh python3-venv && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip

# The ordinary PyPI torch and torchvision (CUDA builds; they also run on a CPU-only machine).
install: $(PY)
	$(PY) -m pip install -q -e .

install-dev: $(PY)
	$(PY) -m pip install -q -e ".[dev]"

demo: install
	$(PY) -m profiling run --output-dir $(DEMO_DIR) -- mnist_classify.py --synthetic --epochs 1 --train-samples 6000 --test-samples 1000

# Debian packages the tests need besides Slurm (slurm-up installs Slurm's own). Lesson 09 serves
# files over sshfs from a private sshd, which needs its privilege-separation folder /run/sshd
# (Debian's service unit creates it; without systemd nothing does).
system-deps:
	$(SUDO) bash jobs/sandbox/apt-install.sh chromium shellcheck sshfs fuse3 openssh-server vmtouch
	$(SUDO) install -d -m 755 /run/sshd

slurm-up:
	$(SUDO) bash jobs/sandbox/$(SANDBOX_UP)

slurm-down:
	$(SUDO) bash jobs/sandbox/$(SANDBOX_DOWN)

# pytest's exit code 5 (no tests collected) is not 0, so it fails this target like any other.
# --durations lists the slowest tests, to keep an eye on the 15-minute budget of `make test`.
test: install-dev system-deps slurm-up lint
	$(PY) -m pytest $(XDIST) --durations=25 $(PYTEST_ARGS)

# ruff, configured in pyproject.toml: pycodestyle and pyflakes, 120 columns.
lint: install-dev
	$(PY) -m ruff check .

clean:
	rm -rf runs .pytest_cache .hypothesis
