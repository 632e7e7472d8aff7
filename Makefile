# The README's two commands: `make demo` (the main job) and `make test` (the test suite).
# Both set up .venv on first use (scripts/setup.sh) and again when pyproject.toml changes.
VENV ?= .venv
STAMP := $(VENV)/.code-gym-installed

.PHONY: demo test setup

$(STAMP): pyproject.toml scripts/setup.sh
	VENV=$(VENV) bash scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/code-gym demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest -n 2 --dist loadgroup -q
