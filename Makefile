# Everything installs into .venv, which the targets create themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The JVM combine kernel of the pane and slice plans; without a JDK they combine in numpy instead.
JAR := wql/runtime/jvm/wql-kernels.jar
JAVA_SOURCES := $(wildcard wql/runtime/jvm/wql/kernels/*.java)

.PHONY: demo-stream demo test test-deep mutants lint format bench bench-plots plots clean check-python check-java jar grammar

jar: $(JAR)

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory check-python
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,notebook,connect]'
	@# bytecode for WQL's modules, as pip compiles an installed package's: where PYTHONDONTWRITEBYTECODE is set,
	@# every wql command would compile them again (0.4 s of a wql check)
	$(BIN)/python -m compileall -q wql > /dev/null
	@touch $(STAMP)

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "WQL needs Python 3.11 or newer; found " + sys.version.split()[0])'

$(JAR): $(JAVA_SOURCES) $(STAMP)
	@if command -v javac >/dev/null 2>&1; then \
	  jars=$$($(BIN)/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))'); \
	  rm -rf build/jvm && mkdir -p build/jvm && \
	  javac -Xlint:all,-path -Werror --release 17 -cp "$$jars/*" -d build/jvm $(JAVA_SOURCES) && \
	  jar cf $@ -C build/jvm . && echo "built $@"; \
	else \
	  echo "javac not found: pane, slice and bins plans will combine in numpy (a JDK 17+ builds the faster JVM kernel)"; \
	fi

# The parser's LALR tables, built from wql/grammar/wql.lark and shipped beside it: lark takes 1.5-2 s to build
# them, which every start of wql paid. Run it after editing the grammar (tests/test_parser.py says when).
grammar: $(STAMP)
	$(BIN)/python -c 'from wql.grammar.parser import save_tables; print("wrote", save_tables())'

check-java:
	@command -v java >/dev/null 2>&1 || { echo "WQL runs on Apache Spark, which needs Java 17 or newer: 'java' is not on PATH."; exit 1; }

demo: $(STAMP) check-java $(JAR)
	$(BIN)/wql run examples/traffic.wql

# A stream: a generator lands csv files while wql prints windows as they close; it stops by itself
# 8 s after the last file, draining the open windows. Late and malformed rows go to build/demo-stream/late.
# The generator follows the stream's checkpoint: each file lands once the trigger over the last is done.
demo-stream: $(STAMP) check-java $(JAR)
	@rm -rf build/demo-stream && mkdir -p build/demo-stream
	@$(BIN)/python examples/streams/generate.py build/demo-stream/landing --files 8 --pause 2 \
	  --follow build/demo-stream/checkpoint & \
	$(BIN)/wql run examples/streams/sensors.wql --stream --input readings=build/demo-stream/landing \
	  --max-files 1 --checkpoint build/demo-stream/checkpoint --late build/demo-stream/late --idle 8 --drain; \
	  status=$$?; wait; exit $$status

# The suite as CI runs it: under ten minutes on two cores (the "dev" test profile, tests/conftest.py).
test: $(STAMP) check-java lint $(JAR)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The thorough profile: more hypothesis examples, every seed, AQE on in the streaming harness, every
# process-spawning test. Run it before changing plans, kernels or streaming.
test-deep: $(STAMP) check-java lint $(JAR)
	WQL_TEST_PROFILE=deep $(BIN)/python -m pytest $(PYTEST_ARGS)

# Each mutant in tests/mutants.py, applied to a scratch copy, must make `make test` fail.
mutants: $(STAMP) check-java $(JAR)
	$(BIN)/python tests/mutants.py

lint: $(STAMP)
	$(BIN)/ruff check wql tests benchmarks
	$(BIN)/ruff format --check wql tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format wql tests benchmarks
	$(BIN)/ruff check --fix wql tests benchmarks

bench: $(STAMP) check-java $(JAR)
	$(BIN)/python benchmarks/sliding.py
	$(BIN)/python benchmarks/slide_by_tuple.py
	$(BIN)/python benchmarks/sessions.py
	$(BIN)/python benchmarks/streaming.py --skip-native-above 60

# Apache Flink as a peer (benchmarks/peers.py, and the deep test's check of WQL's windows against Flink's):
# PyFlink in a virtual environment of its own, never a dependency of WQL; its wheel carries Flink's runtime.
# `make peers` builds it and runs the benchmark (PEERS_ARGS=--smoke: 20,000 rows, a few minutes).
FLINK_VENV := .venv-flink
FLINK_STAMP := $(FLINK_VENV)/.installed
FLINK_VERSION := 2.3.0
.PHONY: peers

$(FLINK_STAMP):
	@$(MAKE) --no-print-directory check-python
	$(PYTHON) -m venv $(FLINK_VENV)
	$(FLINK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(FLINK_VENV)/bin/python -m pip install --quiet apache-flink==$(FLINK_VERSION)
	@touch $(FLINK_STAMP)

peers: $(STAMP) $(FLINK_STAMP) check-java $(JAR)
	$(BIN)/python benchmarks/peers.py $(PEERS_ARGS)

# The charts of docs/performance.md: run the benchmarks' --json modes into benchmarks/results.jsonl
# (an hour or more), then draw docs/images/*.png from it. `make plots` only redraws from the file.
BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	@touch $(BENCH_STAMP)

bench-plots: $(BENCH_STAMP) $(FLINK_STAMP) check-java $(JAR)
	$(BIN)/python benchmarks/record.py --results benchmarks/results.jsonl
	$(BIN)/python benchmarks/plots.py --results benchmarks/results.jsonl --out docs/images

plots: $(BENCH_STAMP)
	$(BIN)/python benchmarks/plots.py --results benchmarks/results.jsonl --out docs/images

clean:
	rm -rf $(VENV) $(FLINK_VENV) $(JAR) build *.egg-info .pytest_cache .ruff_cache .hypothesis
