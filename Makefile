# Parley: the two commands of the README (run, test) plus bench and fuzz.
#
# Every node started from here beacons only to loopback (see docs/DESIGN.md §4.1): the machines this
# project is developed and tested on must never see a beacon on their real network.
export PARLEY_BROADCAST ?= 127.255.255.255

SWIFT_FLAGS := -Xswiftc -warnings-as-errors
PARLEY := .build/debug/parley
## Release builds carry the Swift runtime inside the binary: one file that runs on any Debian
## machine with the C libraries (scripts/install-deps.sh), 5 MB less RSS per node, a faster
## start and about 9% less CPU per write with ten nodes. Its link prints one notice from gold
## about `mktemp` in the toolchain's static Foundation; that is not a warning in Parley's code.
RELEASE_FLAGS := -c release --static-swift-stdlib $(SWIFT_FLAGS)

.PHONY: run test build release install deb deps test-deps bench-build bench sim bench-sweep bench-tail bench-edge bench-ab bench-room bench-vcpus clean lint format fuzz man

deps:
	@scripts/install-deps.sh

## test-deps: what the UI tests need: tmux (terminal chat), man-db and groff (the manual page), zsh
## and fish (completion scripts), chromium, an emoji font and python3 (web UI), and schemathesis
## (pinned, from PyPI, in a virtual environment at .build/schemathesis: the API contract test).
test-deps: deps
	@scripts/install-deps.sh --test

build: deps
	swift build $(SWIFT_FLAGS)

## release: .build/release/parley, the binary to copy to the machines of a LAN.
release: deps
	swift build $(RELEASE_FLAGS) --product parley

## install: the release binary to $(DESTDIR)$(PREFIX)/bin (PREFIX defaults to /usr/local), with its
## manual page and its bash, zsh and fish completions, which the binary writes from its commands,
## and the systemd units (system: runs as user parley, which the Debian package creates; user:
## `systemctl --user enable --now parley`). The same set as `make deb`.
PREFIX ?= /usr/local
install: release
	install -D -m 0755 .build/release/parley $(DESTDIR)$(PREFIX)/bin/parley
	mkdir -p .build/install
	.build/release/parley man > .build/install/parley.1
	.build/release/parley completion bash > .build/install/parley.bash
	.build/release/parley completion zsh > .build/install/_parley
	.build/release/parley completion fish > .build/install/parley.fish
	install -D -m 0644 .build/install/parley.1 $(DESTDIR)$(PREFIX)/share/man/man1/parley.1
	install -D -m 0644 .build/install/parley.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/parley
	install -D -m 0644 .build/install/_parley $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_parley
	install -D -m 0644 .build/install/parley.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/parley.fish
	sed 's|@BINDIR@|$(PREFIX)/bin|' packaging/parley.service > .build/install/parley.service
	sed 's|@BINDIR@|$(PREFIX)/bin|' packaging/parley-user.service > .build/install/parley-user.service
	install -D -m 0644 .build/install/parley.service $(DESTDIR)$(PREFIX)/lib/systemd/system/parley.service
	install -D -m 0644 .build/install/parley-user.service $(DESTDIR)$(PREFIX)/lib/systemd/user/parley.service

## deb: parley_VERSION_amd64.deb here, for `dpkg -i` on Debian machines (scripts/make-deb.sh): the
## release binary, manual page, completions and systemd units; `scripts/test-package.sh FILE` (root)
## installs, checks and removes it, as CI does.
deb: release
	scripts/make-deb.sh .build/release/parley .

## man: .build/parley.1, the manual page generated from the commands' definitions (`man -l .build/parley.1`).
man: build
	$(PARLEY) man > .build/parley.1

## run: build, then the terminal chat in #lobby (the first start asks for a nickname).
run: build
	@$(PARLEY) chat lobby

## test: the whole suite (Swift Testing; swift test also prints an empty XCTest summary); any failure fails it.
## The node tests, the lab's, the terminal chat's tmux tests and the browser tests run in a
## second pass: their links, handshakes, panes and pages have deadlines, and the other suites'
## CPU-heavy and process-spawning tests would otherwise starve Swift's cooperative thread pool
## (one thread per core) while they run in parallel; the lab tests run whole clusters of
## `parley run` processes. The browser tests save screenshots in .build/web-screenshots. The API
## contract test (schemathesis) sends some 1,500 requests with 10 s deadlines.
SLOW_TESTS := NodeTests LabTests TerminalUITests.Tmux BrowserTests SchemathesisTests
test: test-deps lint
	swift build --build-tests $(SWIFT_FLAGS)
	swift test $(SWIFT_FLAGS) $(addprefix --skip ,$(SLOW_TESTS))
	swift test $(SWIFT_FLAGS) $(addprefix --filter ,$(SLOW_TESTS))

## lint: the code follows .swift-format (fix with `make format`).
lint:
	swift format lint --strict -r Sources Tests Fuzz/Sources Package.swift

format:
	swift format -i -r Sources Tests Fuzz/Sources Package.swift

## fuzz: builds the libFuzzer targets (.build/fuzz) and runs each for FUZZ_SECONDS with its seed
## corpus from Fuzz/corpus; `make fuzz TARGET=beacon` runs one. Crashes land in Fuzz/crashes.
FUZZ_SECONDS ?= 30
TARGET ?=
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS) $(TARGET)

## bench-build: parley-bench, built as `make release` builds parley (both targets below use it).
bench-build: release
	swift build $(RELEASE_FLAGS) --product parley-bench

## bench: Parley's figures next to the machine's limits, in release mode (docs/BENCHMARKS.md);
## prints a table and writes bench.json. `make bench BENCH_FLAGS=--quick` for a short run,
## `BENCH_FLAGS='--only apply'` for some figures (a comma-separated list). Never part of the tests.
BENCH_FLAGS ?=
bench: bench-build
	.build/release/parley-bench --out bench.json $(BENCH_FLAGS)

## sim: the simulated network at scale (issue 37), both ways of pushing on the same seed: SIM_NODES
## nodes (default 300), ten writes each, 10% churn, 60 simulated seconds; one pusher per chain into
## sim-chains/report.json, the broadcast tree into sim-tree/report.json, each with its verdict line
## (docs/LAB.md, *Hundreds of nodes, simulated*). `make sim SIM_NODES=1000` is the issue's size.
SIM_NODES ?= 300
SIM_SEED ?= 1
sim: release
	.build/release/parley sim --nodes $(SIM_NODES) --writes $$(( $(SIM_NODES) * 10 )) --churn 0.1 --seed $(SIM_SEED) --duration 60 --out sim-chains
	.build/release/parley sim --nodes $(SIM_NODES) --writes $$(( $(SIM_NODES) * 10 )) --churn 0.1 --seed $(SIM_SEED) --duration 60 --push-tree --out sim-tree

## bench-sweep: the latency cluster at several paces, one row each (latency, CPU per write):
## `make bench-sweep NODES=10 PACES='50 100 200 300 400 500'`: the pace at which the latency leaves the
## targets' range here (docs/BENCHMARKS.md, *Reproducing*).
NODES ?= 10
PACES ?= 50 100 200 300 400 500
bench-sweep: bench-build
	scripts/bench-sweep.sh $(NODES) $(PACES)

## bench-tail: the latency clusters RUNS times, one row each, then p99 grouped by how often the
## host slowed the vCPUs meanwhile, since the tail follows the host: `make bench-tail NODES=3 RUNS=12`
## (docs/BENCHMARKS.md, *Reading the figures on a shared 2-core host*). NODES defaults to 10, as for bench-sweep.
RUNS ?= 10
bench-tail: bench-build
	scripts/bench-tail.sh $(NODES) $(RUNS)

## bench-edge: the CPU per write a latency target allows here: the floor cluster made to spend
## each of EXTRA ms more per write, ROUNDS times: `make bench-edge NODES=3 ROUNDS=5 EXTRA='0 0.1 0.2'`
## (docs/BENCHMARKS.md, *Reproducing*). NODES defaults to 10, as for bench-sweep; EXTRA to levels
## around that target's edge.
ROUNDS ?= 5
EXTRA ?=
bench-edge: bench-build
	scripts/bench-edge.sh $(NODES) $(ROUNDS) $(EXTRA)

## bench-ab: two parley binaries compared by CPU per write in the paced cluster, alternated
## ROUNDS times: `make bench-ab A=/tmp/parley-before B=.build/release/parley NODES=3 ROUNDS=6`
## (CPU per write, which the host moves far less than the tail: docs/BENCHMARKS.md, *Reproducing*).
## NODES defaults to 10, as for bench-sweep; ROUNDS to 5.
bench-ab: bench-build
	scripts/bench-ab.sh "$(A)" "$(B)" $(NODES) $(ROUNDS)

## bench-room: what a person feels in a long room: the web API's post, edit and page of history,
## an edit on the control socket, `parley react` and `parley edit`, timed in a room of MESSAGES
## posts: `make bench-room MESSAGES=100000` (python3; docs/BENCHMARKS.md, *Reproducing*).
MESSAGES ?= 100000
bench-room: release
	scripts/big-room.py --messages $(MESSAGES)

## bench-vcpus: whether the host's slow episodes hit one vCPU or all of them at once: a probe
## thread pinned to each CPU for VCPU_SECONDS (docs/BENCHMARKS.md, *Reading the figures on a shared
## 2-core host*). Built with the C compiler the Swift toolchain brings (clang) if there is no cc.
VCPU_SECONDS ?= 20
bench-vcpus:
	@compiler=$$(command -v cc || command -v clang) || { echo "make bench-vcpus: no C compiler (cc or clang) on PATH; install one, e.g. apt-get install gcc" >&2; exit 1; }; \
	mkdir -p .build && $$compiler -O2 -pthread scripts/vcpu-episodes.c -o .build/vcpu-episodes
	.build/vcpu-episodes $(VCPU_SECONDS)

clean:
	swift package clean
