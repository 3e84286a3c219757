# Parley: the two commands of the README (run, test) plus bench.
#
# Every node started from here beacons only to loopback (see DESIGN §4.1): the machines this
# project is developed and tested on must never see a beacon on their real network.
export PARLEY_BROADCAST ?= 127.255.255.255

SWIFT_FLAGS := -Xswiftc -warnings-as-errors
PARLEY := .build/debug/parley
NICK ?= $(shell id -un 2>/dev/null || echo me)

.PHONY: run test build deps bench clean lint format

deps:
	@scripts/install-deps.sh

build: deps
	swift build $(SWIFT_FLAGS)

## run: build, create your identity if needed, and show #lobby (the terminal chat replaces this).
run: build
	@$(PARLEY) whoami >/dev/null 2>&1 || $(PARLEY) init --nick "$(NICK)"
	@$(PARLEY) join lobby >/dev/null
	@$(PARLEY) history --room lobby --limit 20
	@echo "Say something: $(PARLEY) send --room lobby 'hello'   (all commands: $(PARLEY) --help)"

## test: the whole suite (XCTest and Swift Testing); any failure fails it.
## The node and lab tests run in a second pass: their links and handshakes have deadlines, and
## the other suites' CPU-heavy and process-spawning tests would otherwise starve Swift's
## cooperative thread pool (one thread per core) while they run in parallel; the lab tests run
## whole clusters of `parley run` processes.
test: deps lint
	swift build --build-tests $(SWIFT_FLAGS)
	swift test $(SWIFT_FLAGS) --skip NodeTests --skip LabTests
	swift test $(SWIFT_FLAGS) --filter 'NodeTests|LabTests'

## lint: the code follows .swift-format (fix with `make format`).
lint:
	swift format lint --strict -r Sources Tests Package.swift

format:
	swift format -i -r Sources Tests Package.swift

## bench: micro-benchmarks in release mode; prints a table and writes bench.json.
bench: deps
	swift build -c release --product parley-bench $(SWIFT_FLAGS)
	.build/release/parley-bench --out bench.json

clean:
	swift package clean
