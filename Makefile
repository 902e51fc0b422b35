# The quick start is exactly two commands: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_OUT ?= results/demo
SITE_OUT ?= results/site

.PHONY: demo test docs bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# two stamps: the demo needs only the runtime dependencies (with the pip the venv comes with, which installs
# them as they are), the tests and docs also the extras (with an up-to-date pip). pip byte-compiles what it
# installs on one core: compileall does the same on all cores (imports then find the same byte code); a
# file it cannot compile only stays uncompiled, as pip leaves it
$(VENV)/.installed-runtime: $(BIN)/python pyproject.toml
	@echo "installing graindem into $(VENV)/ ..."
	$(BIN)/python -m pip install --quiet --no-compile -e .
	-$(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null
	touch $@

$(VENV)/.installed: $(BIN)/python pyproject.toml
	@echo "installing graindem and its test, documentation and MPI extras into $(VENV)/ ..."
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.installed-runtime

demo: $(VENV)/.installed-runtime
	@echo "graindem demo: the first run compiles the numba kernels on both cores (about 3 minutes on 2; later runs"
	@echo "load them from the cache and take seconds), then runs a 512-sphere biaxial test and, beside it, the"
	@echo "contact-law checks; results go to $(DEMO_OUT)/"
	$(BIN)/graindem demo --out $(DEMO_OUT)

# the suite on TEST_WORKERS pytest-xdist processes, one test file per worker at a time (module fixtures are
# built once); most of a first run is numba compiling kernels, which the workers share through the cache,
# so the files are handed out in the order tests/conftest.py gives them (LEAD_FILES: the workers start on
# different kernels), not re-sorted by pytest-xdist
TEST_WORKERS ?= 2
test: $(VENV)/.installed
	@echo "graindem tests: most of the first run is numba compiling the kernels (see README.md)"
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir $(SITE_OUT)
	@echo "documentation site written to $(SITE_OUT)/index.html"

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/contact_kernel.py --json results/bench/contact_kernel.json

clean:
	rm -rf $(VENV) results .pytest_cache
