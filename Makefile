# LinkDyn: distributed inverse dynamics in FPGA gateware.
# `make install` sets up .venv; every other target uses it.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip

BOARD  ?= ulx3s
NODES  ?=
POLICY ?= sequential

# $(call apt_install,check,package,consequence): install a Debian package when the shell
# command `check` fails (as root, or through sudo), else warn.
define apt_install
@if ! $(1) >/dev/null 2>&1; then \
  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
    apt-get update -qq && apt-get install -y -qq $(2); \
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
    sudo apt-get update -qq && sudo apt-get install -y -qq $(2); \
  else \
    echo "warning: $(2) is not installed and cannot be installed here; $(3)"; \
  fi; \
fi
endef

.PHONY: install test test-long bench demo experiments verilog bitstream program formal clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[reference,boards,sim,test,formal]'
	$(call apt_install,command -v iverilog,iverilog,cocotb tests will be skipped)
	$(call apt_install,ldconfig -p | grep -q libOSMesa.so,libosmesa6,MuJoCo scenes cannot be rendered)
	touch $@

test: install
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --durations=25

test-long: install
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 LINKDYN_LONG=1 $(PY) -m pytest -q

bench: install
	$(PY) -m linkdyn.bench

verilog: install
	$(PY) -m linkdyn.gateware.chain --nodes $(or $(NODES),6) --policy $(POLICY) --out build/verilog/linkdyn_chain_$(or $(NODES),6).v

bitstream: install
	$(PY) -m linkdyn.boards.build --board $(BOARD) $(if $(NODES),--nodes $(NODES)) $(if $(CLOCK_MHZ),--clock-mhz $(CLOCK_MHZ)) $(if $(filter 1,$(CONTROLLERS)),--controllers) $(if $(filter 1,$(LOCAL_LOOP)),--local-loop) $(if $(ROBOT),--robot $(ROBOT)) $(if $(PARENTS),--parents=$(PARENTS)) $(if $(ROUTER),--router $(ROUTER)) $(if $(SEED),--seed $(SEED)) $(if $(filter 1,$(DISTRIBUTED)),--distributed) $(if $(ROLE),--role $(ROLE)) $(if $(BOARDS),--boards $(BOARDS)) $(if $(filter-out sequential,$(POLICY)),--policy $(POLICY)) $(if $(BANKS),--banks $(BANKS))

program: install
	$(call apt_install,command -v openFPGALoader,openfpgaloader,boards cannot be programmed)
	$(PY) -m linkdyn.boards.program --board $(BOARD)

formal: install
	$(PY) -m linkdyn.sim.controller_formal

demo: install
	$(PY) -m linkdyn.host.demo --out build/demo

# The closed-loop experiments of the paper's Sect. 4 on the MuJoCo plant (golden mode), then the
# results section of docs/experiments.md regenerated from their summary.json (a few minutes).
EXPERIMENTS_OUT ?= build/experiments
experiments: install
	rm -f $(EXPERIMENTS_OUT)/summary.json
	for name in contact point track payload identify; do \
	  OPENBLAS_NUM_THREADS=1 $(PY) -m linkdyn.host experiment $$name --robot ur5 --out $(EXPERIMENTS_OUT) || exit 1; \
	done
	$(PY) -m linkdyn.host.experiments.docs --summary $(EXPERIMENTS_OUT)/summary.json \
	  --docs docs/experiments.md --img docs/img

clean:
	rm -rf build sim_build .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
