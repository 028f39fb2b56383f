# runnerd: the two commands of the README, and the targets they use.
#   make run    install what is missing, build, run the demo
#   make test   install what is missing, build, run every test through ctest: unit tests, the
#               same under ASan+UBSan, the CLI, integration and end-to-end tests, clang-format,
#               a short fuzz run

BUILD      ?= build
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 15
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

BUILD_DEPS := gcc make cmake pkg-config libseccomp-dev libcap-dev libjansson-dev libcmocka-dev
# npm and g++: node-pty (tests/integration/npm-deps.sh) builds its native part on Linux. npm
# only if no npm is there: NodeSource's nodejs brings its own, which Debian's would conflict with.
# gh: the GitHub CLI, a program the docs' example rule grants a secret (security.py).
TEST_DEPS  := $(BUILD_DEPS) python3 libpython3.11-testsuite nodejs busybox-static procps \
              bubblewrap socat gh \
              clang libclang-rt-14-dev clang-format tmux python3-pexpect musl-tools g++ \
              $(if $(shell command -v npm 2>/dev/null),,npm)

.PHONY: all build run test fuzz bench deps test-deps install deb test-containers clean format \
	format-check

all: build

# Installs the listed Debian packages that are missing, with apt-get, only when some are.
define install_missing
	@missing=""; \
	if ! command -v dpkg-query >/dev/null 2>&1; then \
		echo "make: not a Debian system: make sure these are installed: $(1)"; exit 0; \
	fi; \
	for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make: installing$$missing"; \
		if [ "$$(id -u)" = 0 ]; then sudo=""; \
		elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
		else echo "make: need root or sudo to install:$$missing" >&2; exit 1; fi; \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(BUILD_DEPS))

test-deps:
	$(call install_missing,$(TEST_DEPS))

$(BUILD)/Makefile: CMakeLists.txt tests/CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./tests/demo/demo.sh $(BUILD)/bin/runnerd

test: test-deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)
	./tests/integration/npm-deps.sh $(BUILD)/npm
	./tests/e2e/npm-agents.sh $(BUILD)/npm-agents
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# runnerd in real container engines: podman (rootful, and rootless as runnerd-ci) with runc,
# docker (a dockerd of its own, stopped after),
# an image made from a Debian 12 root by debootstrap (kept in $(BUILD)/containers) and the .deb
# of make deb, packaging/Containerfile; and that root booted with Debian 12's kernel in qemu,
# for AppArmor (tests/containers/apparmor_vm.py); needs root. .ci/run runs it after make test.
CONTAINER_DEPS := podman runc debootstrap uidmap docker.io systemd qemu-system-x86 cpio
test-containers: deb
	$(call install_missing,$(CONTAINER_DEPS))
	-./tests/e2e/npm-agents.sh $(BUILD)/npm-agents
	DEB=$$(ls -t $(DEB_BUILD)/runnerd_*.deb | head -n 1) WORK=$(abspath $(BUILD))/containers \
		NPM_AGENTS=$(abspath $(BUILD))/npm-agents python3 tests/containers/engines.py

# A longer fuzz run on its own: make fuzz FUZZ_SECONDS=300
fuzz: test-deps
	./tests/fuzz/run.sh $(CURDIR) $(CURDIR)/$(FUZZ_BUILD) $(FUZZ_SECONDS)

# Per-exec cost of plain fork+exec, unshare, bwrap and runnerd, measured in one run; then whole
# sessions of the real agent CLIs (installed as make test does), plain and under runnerd.
bench: build
	-./tests/e2e/npm-agents.sh $(BUILD)/npm-agents
	./bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD)

# A .deb of runnerd for /usr (binaries, config, profiles, man page, AppArmor profiles), built
# in its own tree: $(DEB_BUILD)/runnerd_VERSION_ARCH.deb
DEB_BUILD ?= build-deb
deb: deps
	cmake -S . -B $(DEB_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr
	cmake --build $(DEB_BUILD) -j $(JOBS) --target runnerd runnerd-stub runnerd-zygote runnerd-intercept \
		runnerd-config
	cd $(DEB_BUILD) && cpack -G DEB

format:
	clang-format -i $$(git ls-files --cached --others --exclude-standard '*.c' '*.h')

format-check:
	./tests/format-check.sh $(CURDIR)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD) $(DEB_BUILD)
