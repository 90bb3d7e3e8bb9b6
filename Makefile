# locket — see README.md. `make install` then `make test` is the whole set-up.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# locket finds its helpers (locket-postgres, locket-tpm) at ../libexec/locket/ from its own
# directory (or beside itself, as in the build tree): keep BINDIR and
# LIBEXECDIR siblings under one PREFIX.
LIBEXECDIR ?= $(PREFIX)/libexec
# The session's keyring (SPEC §20): pam_locket.so in the PAM module directory,
# the provider's systemd user unit, and a D-Bus service file kept out of the
# bus's directories (neither takes anything over by itself: README "On a desktop").
PAMDIR ?= $(shell dir=$$(pkg-config --variable=libdir pam 2>/dev/null); echo $${dir:-/lib}/security)
SYSTEMDUSERUNITDIR ?= $(PREFIX)/lib/systemd/user
LOCKETDATADIR ?= $(PREFIX)/share/locket
# The secret portal's backend file (issue 41), read by xdg-desktop-portal from
# its own share directory only (/usr/share for Debian's): a /usr/local install
# is inert there; a package's (PREFIX=/usr) is chosen by a portals.conf that
# names it (1.17 and later), or by 1.16's fallback to the first Secret backend
# by name on a desktop that names none (README "Browsers and sandboxed apps").
PORTALDIR ?= $(PREFIX)/share/xdg-desktop-portal/portals

SWIFT ?= swift
# A static executable starts in well under a millisecond; a dynamic Swift
# binary spends ~5 ms in the loader (SPEC §11).
# Built in a scratch path of its own, then copied to BIN: `make test` builds
# it while the tests' debug build runs in .build (two SwiftPM instances can't
# share one scratch path).
# Linked by lld with link/startup.order (bench/startup-order makes it): the
# code `find` and the other common commands run sits together at the start of
# .text, in sections of one function each, instead of spread over 11 MB, so a
# lookup faults in fewer pages of the executable and a cold start reads fewer
# from disk (bench/README.md "Start-up"). A scratch path of its own: the
# compiler keeps an object whose IR has not changed whatever the code-generation
# flags, so objects built without function sections would stay.
RELEASE_FLAGS = -c release --scratch-path .build/ordered -Xswiftc -static-executable \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
	-Xswiftc -use-ld=lld -Xlinker --symbol-ordering-file=$(CURDIR)/link/startup.order -Xlinker --no-warn-symbol-ordering \
	$(METADATA_FLAGS) $(LARGE_FOLIO_FLAGS) $(START_UP_FLAGS) $(REPRODUCIBLE_FLAGS)
# Concrete generic types (a Dictionary of Strings, an Array of tuples) are by
# default looked up at run time by mangled name, and each first lookup scans
# every protocol conformance in the static binary to check the type's
# requirements: a quarter of `find`'s instructions. Metadata accessors that
# take the witness tables directly skip the scan (issue 7, bench/README.md).
# Given here, not in Package.swift: SwiftPM refuses unsafeFlags in a package
# that others depend on by version (SPEC §19).
METADATA_FLAGS = -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
# make test's debug build has no debug information (-gnone): a clean clone's
# make test is bound by CPU time on 2 cores; full -g cost its debug build 189
# CPU-seconds against 157 for line tables only, and line tables 185 against
# 173 for none (clean builds of the same commit in scratch paths, one after
# the other; 188 with -index-ignore-clang-modules, which saves nothing;
# issue 38). A failed test still names its file and line (XCTest's #filePath
# and #line); a crash's backtrace names functions (the symbol table) but not
# lines: `make build-tests DEBUG_INFO=-gline-tables-only` to debug one.
# Each module is compiled by one frontend (-wmo, its code generated on as
# many threads as there are cores), not by batches that each parse the
# module again and a module job that type-checks it again. A clean debug
# build, this (with line tables) against `swift build --build-tests
# -gline-tables-only`, in fresh clones (issue 38): 183 CPU-s against 243 run
# side by side; 149-183 against 195-222 one after the other under other
# engineers' builds. An edit recompiles its whole module (one file of
# LocketCLITests: 49 CPU-s, the module and the link). The index
# store is kept (SwiftPM finds the tests through it on Linux), without the
# system modules (Foundation, Glibc, XCTest) indexed into it.
# Beside that frontend the driver runs a job that writes the module file,
# which no dependent module uses sooner (SwiftPM's builtin swift tool starts
# one when the whole command, objects included, has ended; its
# --use-integrated-swift-driver would start it on the module file alone, but
# names a new temporary file in every job's command line, so that each
# `swift build` compiled every module again). Without that job
# (-no-emit-module-separately-wmo) LocketCore's command took 20-26 CPU-s
# against 20-28 with it and 21.6 s against 20.1 on a quieter machine (five
# runs each, alternated, load 3.5-8): the frontend then writes the file
# itself, on the critical path. Not worth a flag (issue 38).
# DEBUG_JOBS commands at once, twice the cores: with one a core (SwiftPM's
# default), SecurityTests and LocketCoreTests took both once LocketTestSupport
# was built and LocketCLITests, the longest module (37 CPU-s), started only
# when SecurityTests ended; now the three compile together.
# `make build-tests` builds the same way by hand; a plain `swift build
# --build-tests` uses other flags and so rebuilds every module (and make test
# rebuilds them again after it).
DEBUG_INFO ?= -gnone
DEBUG_JOBS ?= $(shell echo $$((2 * $$(nproc 2>/dev/null || echo 1))))
# Unoptimised Swift keeps a copy of every local variable in a stack slot of
# its own for the debugger, each zeroed by a call to memset when its function
# is entered: in bcrypt_pbkdf's Blowfish round, seven calls for four table
# lookups. Without debug information (or with line tables only, which name no
# variable) nothing reads them: -disable-debugger-shadow-copies leaves them
# out. With it LocketCore's objects alone took the tests that run its code
# 25-35 % less CPU time (KeysExport/KeysImport's OpenSSH tests, BackupDamage,
# Query: 14.3 and 16.6 user-s against 11.3 and 11.0, alternated) and the same
# time to compile (30.7 and 29.3 CPU-s against 30.8 and 29.2); in a whole
# run of the tests, both builds at once (load 9-12), LocketCoreTests took 83.9
# CPU-s against 90.9, the end-to-end suites (the release binary's time) the
# same within their noise (issue 38).
# `make build-tests DEBUG_INFO=-g`, to debug with variables, keeps them.
SHADOW_COPIES = $(if $(filter -g,$(DEBUG_INFO)),,-Xswiftc -Xfrontend -Xswiftc -disable-debugger-shadow-copies)
DEBUG_FLAGS = -Xswiftc $(DEBUG_INFO) -Xswiftc -wmo -Xswiftc -num-threads -Xswiftc $(shell nproc 2>/dev/null || echo 2) \
	-Xswiftc -index-ignore-system-modules $(SHADOW_COPIES) -j $(DEBUG_JOBS)
# One `swift build --build-tests` call: the test bundle, the programs it
# starts (SecurityTestHost, LocketAgentTestHost, CompatAcceptanceBuild), the
# helpers that the bundle and SecurityTestHost find beside themselves
# (CompanionExecutableTests; the Security module on a remote keychain in
# RemoteCommandLineTests), and the debug `locket`, provider and benchmark,
# which the tests don't run (LOCKET_BIN is the release one) but which are
# only links of modules built anyway (4 CPU-s). A call a product planned the
# package again each time (1.3-1.7 s with nothing to build, 3-4 s between
# products of a clean build) and built the three small products after the
# test bundle one after another with a core idle. Two calls (CompatAcceptanceBuild,
# then --build-tests) kept what does not need the engine (LocketSupportTests,
# the debug helpers) from the core LocketCore's compile leaves idle, and
# LocketCLI from starting beside the Security module: one call saves that
# and the second planning. LocketCLI, then LocketCLITests, is the critical
# path: it started 11-13 s after LocketRemote ended with two calls on a
# quiet machine (63-82 s under load 7-11), 2-3 s after with one (load 5-9).
# Since it names no backend (LocketCLIBackends supplies them) it starts when
# LocketCore and LocketTerminal are built, beside LocketRemote: 7.6, 16.1 and
# 11.1 s after LocketCore ended against 77.0, 28.8 and 41.5 before (clean
# builds alternated, load 5-22; the quietest pair ended at 413.9 and 416.0 s,
# which is within this machine's noise); a model of 2 idle cores with those
# modules' CPU times ends 3.6-3.8 s sooner (122.2 -> 118.6, 121.0 -> 117.2 s),
# not 10: on 2 cores LocketCLI now shares them with LocketRemote instead of
# waiting for it (issue 38).
# Clean `make build-tests` on this shared machine, one after the other:
# two calls 746 and 601 s, 237 and 224 CPU-s; one call 506 s, 218 CPU-s.
# A model of the build on 2 otherwise idle cores (each module's measured CPU
# time, 4 commands at once, the compat package beside): 137.5 s against
# 150.1; 140.4 with make test's fetch of secretstorage (PREPARE_TESTS)
# beside it, which takes 8 CPU-s out of the tests (issue 38).
# As soon as CompatAcceptanceBuild is linked (removed before the call, so that
# its file means this build linked it; an executable still being written is
# busy and tried again), the acceptance package of shared/compat's libraries,
# which links the engine's objects from its link list, is built in the
# background beside the rest of the build, which leaves part of the cores idle
# (the CLI tests' module is a long tail). CompatAcceptanceTests then finds it
# built; a failed build is said here in one line and fails that test with
# the compiler's errors (issue 38). When the build fails before that link,
# the package is not built.
# What runs beside the debug build and its critical path does not wait for
# (that package; in make test the release steps, which after make install
# find nothing to do) runs at nice 19 while the debug build runs: it then
# takes the cores the build leaves idle (LocketCore's compile, the CLI tests'
# module alone at the end) instead of a share of the cores the critical path
# needs (LocketCore, LocketCLI and the test modules). It is set back to nice 0
# as soon as the debug build ends (Tests/raise-priority: every thread of it
# and of its children; the release steps' shell is what is started niced, so
# that a step it starts after that runs at nice 0 too), so that what is left
# of it never waits behind the tests. Only as root: an unprivileged process
# may not lower its nice value again, and that package's build left at nice
# 19 beside make test's tests would starve. make test's build phase from a
# clean debug build (the release one made), alternated, load 2.5-3: 117.1
# and 119.2 s with it, 121.8 and 122.3 with BACKGROUND_NICE=0 (issue 38).
BACKGROUND_NICE = $(if $(filter 0,$(shell id -u)),19,0)
COMPAT_LOG = .build/compat-acceptance/build.log
BUILD_COMPAT = { until [ -x "$$bin/CompatAcceptanceBuild" ]; do \
		kill -0 $$build 2>/dev/null || [ -x "$$bin/CompatAcceptanceBuild" ] || exit 0; sleep 0.5; done; \
	mkdir -p .build/compat-acceptance; tries=0; \
	until nice -n $(BACKGROUND_NICE) "$$bin/CompatAcceptanceBuild" </dev/null >$(COMPAT_LOG) 2>&1; do \
		status=$$?; tries=$$((tries + 1)); \
		if [ $$status -eq 126 ] && [ $$tries -lt 60 ]; then sleep 0.5; continue; fi; \
		echo "shared/compat's acceptance package did not build ($(COMPAT_LOG)): CompatAcceptanceTests will fail with its errors" >&2; break; \
	done; }
BUILD_TESTS = bin=$$($(SWIFT) build --show-bin-path) || exit $$?; \
	rm -f "$$bin/CompatAcceptanceBuild"; \
	$(SWIFT) build --build-tests $(DEBUG_FLAGS) & build=$$!; \
	$(BUILD_COMPAT) & compat=$$!; \
	wait $$build; status=$$?; \
	[ $(BACKGROUND_NICE) -eq 0 ] || Tests/raise-priority $$compat $$background; \
	wait $$compat; exit $$status
# The first code run is locket_entry, which advises the hot code (from the
# 2 MiB-aligned first symbol of the order to its last) and the data into
# large folios (Sources/CLocketSystem/entry.c, bench/README.md "Large folios");
# segments 2 MiB aligned, so that code starts a folio of the file.
LARGE_FOLIO_FLAGS = $(if $(filter x86_64,$(shell uname -m)),-Xlinker -z -Xlinker max-page-size=0x200000 -Xlinker -e -Xlinker locket_entry)
# libcrypto's CPU probe (a dozen CPUID traps on a VM) waits for its first use
# instead of running in every process (Sources/CLocketSystem/crypto_probe.c);
# the Swift runtime's argv search through /proc/self/maps and its backtracer
# are left out (Sources/CLocketSystem/runtime.c).
START_UP_FLAGS = -Xcc -DLOCKET_DEFER_CRYPTO_PROBE -Xlinker --wrap=OPENSSL_cpuid_setup $(LEAN_RUNTIME)
# runtime.c stands in for symbols of libswiftCore.a, as one toolchain defines
# and calls them: it is on only with the Swift it was checked against, and
# another toolchain builds without it (locket-binary says so) until someone
# checks runtime.c against that one's CommandLine.cpp, Backtrace.cpp and
# Errors.cpp. Asked once per make, on first use (`swift` is swiftc's driver).
LEAN_RUNTIME_SWIFT = 6.3
SWIFT_VERSION = $(eval SWIFT_VERSION := $$(shell $$(SWIFT) --version 2>/dev/null | sed -n 's/^.*Swift version \([0-9][0-9.]*\).*$$$$/\1/p'))$(SWIFT_VERSION)
LEAN_RUNTIME = $(if $(filter $(LEAN_RUNTIME_SWIFT) $(LEAN_RUNTIME_SWIFT).%,$(SWIFT_VERSION)),-Xcc -DLOCKET_LEAN_RUNTIME)
# Nothing of the checkout's path in what is built, so that two clones of a
# commit build the same bytes (docs/PACKAGING.md "Reproducible"): the C
# sources' and headers' paths (__FILE__ in libcrypto's OPENSSL_free, as
# Swift imports it) and the Swift ones are mapped to '.', no Swift debug
# info (it names clang's module cache, whose directory is a hash of the
# checkout's path; the symbol table stays, which is what callgrind and perf
# read), and no .swift_modhash (link/reproducible.ld).
REPRODUCIBLE_FLAGS = -Xswiftc -gnone -Xswiftc -file-prefix-map -Xswiftc $(CURDIR)=. -Xcc -ffile-prefix-map=$(CURDIR)=. \
	-Xlinker -T -Xlinker $(CURDIR)/link/reproducible.ld
BIN = .build/release/locket
# The PostgreSQL helper links libpq dynamically (Debian ships no static
# libpgcommon/libpgport, and libpq needs GSSAPI and LDAP), so it is built apart
# from the static executable, with the Swift runtime linked in statically
# (and the metadata accessors its LocketSystem and LocketSupport had before).
HELPER = .build/release/locket-postgres
# No $$ORIGIN run path (SwiftPM's default): it loads Debian's libraries only;
# every symbol bound at start and the relocations read-only after (they hold
# a database password, a TPM authorization value).
HELPER_FLAGS = -c release --scratch-path .build/helper -Xswiftc -static-stdlib $(METADATA_FLAGS) --disable-local-rpath -Xswiftc -use-ld=lld \
	-Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro $(REPRODUCIBLE_FLAGS)
# The TPM helper (SPEC §21) likewise: Debian ships libtss2 (ESAPI, the TCTI
# loader, MU) as shared libraries only; the Swift runtime goes in statically.
TPM_HELPER = .build/release/locket-tpm
# The Secret Service provider (SPEC §18): libdbus-1 is linked into it alone,
# statically like the rest of `locket` (libdbus-1.a from libdbus-1-dev; the
# two libsystemd functions it calls are answered by CLocketDBus), so `find`
# pays nothing for D-Bus and the provider needs no library at run time.
SECRET_SERVICE = .build/release/locket-secret-service
# Each Swift executable's list of the archive members lld took in and why
# (--why-extract, in .build/link-maps, not installed): from the static
# archives in it, dist/deb/build names their Debian source packages in the
# package's Built-Using field. An executable linked before it had its list
# is linked again.
LINK_MAPS = .build/link-maps
LINK_MAP = -Xlinker --why-extract=$(CURDIR)/$(LINK_MAPS)/$(1).extract
FRESH_MAP = mkdir -p $(LINK_MAPS); [ -s $(LINK_MAPS)/$(2).extract ] || rm -f $(1)
# The PAM module: small C with no Swift runtime (it runs inside sshd, gdm and
# login), built by cc into the build tree, which the tests load it from. It
# finds locket at make install's $(BINDIR)/locket, fixed here (login reads no
# environment variable for it); a change of BINDIR rebuilds it.
PAM_MODULE = .build/pam/pam_locket.so
PAM_CFLAGS = -std=gnu11 -O2 -g -ffile-prefix-map=$(CURDIR)=. -Wall -Wextra -Werror -fPIC -fvisibility=hidden -fstack-protector-strong -D_FORTIFY_SOURCE=2
PAM_LDFLAGS = -shared -Wl,-z,relro,-z,now -Wl,--no-undefined

.PHONY: all deps test-deps build build-tests test install install-files uninstall bench fuzz clean pam deb release package-test repro-check

all: build

# Debian packages the build needs: pkg-config, the -dev packages whose
# static archives (libsodium.a, libsqlite3.a, libcrypto.a, libdbus-1.a) go
# into the static executables, libpq-dev for the PostgreSQL helper, and cc
# with libpam0g-dev for the PAM module, libtss2-dev for the TPM helper;
# dpkg-dev (dpkg-shlibdeps, dpkg-gencontrol) for `make deb`.
deps:
	@missing=""; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	command -v dpkg-shlibdeps >/dev/null 2>&1 || missing="$$missing dpkg-dev"; \
	command -v $(CC) >/dev/null 2>&1 || missing="$$missing gcc"; \
	[ -f /usr/include/security/pam_modules.h ] || missing="$$missing libpam0g-dev"; \
	pkg-config --exists tss2-esys tss2-tctildr tss2-mu tss2-rc tss2-sys 2>/dev/null || missing="$$missing libtss2-dev"; \
	for pair in libsodium:libsodium-dev sqlite3:libsqlite3-dev libcrypto:libssl-dev libpq:libpq-dev dbus-1:libdbus-1-dev; do \
		pc=$${pair%%:*}; pkg=$${pair##*:}; \
		lib=$$(pkg-config --variable=libdir $$pc 2>/dev/null); \
		name=$$pc; [ $$pc = libsodium ] && name=sodium; [ $$pc = libcrypto ] && name=crypto; [ $$pc = libpq ] && name=pq; \
		[ -n "$$lib" ] && [ -f "$$lib/lib$$name.a" ] || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

# Tools the end-to-end tests drive for real: git (credential helper and an HTTP
# clone), python3 (the test HTTP server, pty prompts), zsh and fish (their
# completion scripts are loaded); skopeo, docker-registry and htpasswd
# (apache2-utils) for the docker credential helper's registry login; pass and
# gpg (a real pass store to migrate), keepassxc-cli (a real KeePassXC export);
# for the key tests, openssl and ssh-keygen (fixtures, and reading locket's
# exports back) and Python's cryptography, PyNaCl and bcrypt (independent
# ECIES, sealed boxes, bcrypt_pbkdf), from Debian when neither python3 on PATH
# nor Debian's has them; for the ssh-agent tests, ssh, ssh-add and a loopback
# sshd (openssh-client, openssh-server); strace (the read path writes nothing,
# SPEC §11); groff (the man page renders without a warning); for the Secret
# Service (SPEC §18) the real clients on a private bus: dbus-daemon,
# secret-tool (libsecret-tools), Debian's python3 secretstorage and keyring
# (their /usr/bin/python3), docker-credential-secretservice
# (golang-docker-credential-helpers), git's libsecret credential helper built
# from the sources Debian's git ships (cc, libsecret-1-dev), and pip to fetch
# secretstorage's own test suite. Tests that need one skip when it is missing.
# The services' real clients (issue 29): systemd-creds (systemd) seals the
# keychain password; kubectl (kubernetes-client); the AWS CLI version 2
# (awscli: `aws configure export-credentials` is not in version 1).
# The session's keyring (issue 36): pamtester and libpam-wrapper (the module
# loaded by a real PAM stack from a private service directory), pypamtest
# (python3-pypamtest: pam_setcred, which pamtester can't call), useradd
# (passwd) for a real test user, python3-dbusmock (logind on a private system
# bus), gnome-keyring (its service file is the one a disabled switch leaves).
# Browsers and sandboxed apps (issue 41): chromium (headless, its Safe
# Storage key in locket), xdg-desktop-portal (the secret portal),
# bubblewrap (each test app in a sandbox with a /.flatpak-info, which is how
# the portal names an app) and xdg-dbus-proxy (the sandbox's bus filtered as
# Flatpak filters it: only the portal).
# Keys in a TPM (issue 39): swtpm (a TPM 2.0 on loopback per test class; the
# tests need none of swtpm-tools' provisioning), tpm2-tools (tpm2_getcap reads
# the lockout counter, tpm2_pcrextend), tpm2-openssl (the TPM tools' reading of
# the key files locket keeps).
# The instruction budget of a lookup (issue 43): valgrind's callgrind counts
# `find -w` (bench/find-instructions), strip (binutils) drops the debug
# information valgrind cannot read.
# The package's tests (make package-test, docs/PACKAGING.md): lintian,
# piuparts and mmdebstrap (the chroot's base).
# Without their recommended packages, which no test uses (avahi, samba's and
# CUPS's libraries, Qt's Wayland, clipboard tools...): on a new machine 86
# packages instead of 155, 23.8 CPU-s of apt-get instead of 30.4, which make
# test spends beside its build (issue 38).
test-deps:
	@missing=""; \
	for tool in git:git python3:python3 zsh:zsh fish:fish skopeo:skopeo docker-registry:docker-registry htpasswd:apache2-utils pass:pass gpg:gnupg gpgconf:gnupg keepassxc-cli:keepassxc openssl:openssl ssh-keygen:openssh-client ssh:openssh-client ssh-add:openssh-client /usr/sbin/sshd:openssh-server strace:strace groff:groff-base dbus-daemon:dbus-daemon secret-tool:libsecret-tools docker-credential-secretservice:golang-docker-credential-helpers cc:gcc; do \
		command -v $${tool%%:*} >/dev/null 2>&1 || missing="$$missing $${tool##*:}"; \
	done; \
	pkg-config --exists libsecret-1 2>/dev/null || missing="$$missing libsecret-1-dev"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	for tool in systemd-creds:systemd kubectl:kubernetes-client pamtester:pamtester useradd:passwd gnome-keyring-daemon:gnome-keyring \
			chromium:chromium bwrap:bubblewrap /usr/libexec/xdg-desktop-portal:xdg-desktop-portal xdg-dbus-proxy:xdg-dbus-proxy \
			swtpm:swtpm tpm2_getcap:tpm2-tools lintian:lintian piuparts:piuparts mmdebstrap:mmdebstrap valgrind:valgrind strip:binutils; do \
		command -v $${tool%%:*} >/dev/null 2>&1 || missing="$$missing $${tool##*:}"; \
	done; \
	[ -x /usr/bin/aws ] || aws --version 2>/dev/null | grep -q '^aws-cli/2' || missing="$$missing awscli"; \
	ls /usr/lib/*/libpam_wrapper.so >/dev/null 2>&1 || missing="$$missing libpam-wrapper"; \
	ls /usr/lib/*/ossl-modules/tpm2.so >/dev/null 2>&1 || missing="$$missing tpm2-openssl"; \
	if [ -x /usr/bin/python3 ]; then \
		missing="$$missing $$(/usr/bin/python3 Tests/missing-modules secretstorage:python3-secretstorage keyring:python3-keyring \
			pip:python3-pip dbusmock:python3-dbusmock pypamtest:python3-pypamtest 2>/dev/null)"; \
		either=$$(/usr/bin/python3 Tests/missing-modules cryptography:python3-cryptography nacl:python3-nacl bcrypt:python3-bcrypt 2>/dev/null); \
		[ -z "$$either" ] || ! command -v python3 >/dev/null 2>&1 \
			|| either=$$(python3 Tests/missing-modules $$(for p in $$either; do printf '%s:%s ' $${p#python3-} $$p; done) 2>/dev/null); \
		missing="$$missing $$either"; \
	else \
		missing="$$missing python3-secretstorage python3-keyring python3-pip python3-dbusmock python3-pypamtest python3-cryptography python3-nacl python3-bcrypt"; \
	fi; \
	missing=$$(echo $$missing); \
	if [ -n "$$missing" ]; then \
		echo "make test-deps: installing $$missing"; \
		sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		($$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing) \
			|| echo "make test-deps: could not install $$missing; the tests that need them will skip"; \
	fi

# Only the executable: not the tests' support target nor the agent's test host.
# In the order make test's suites need them: the helpers (small; the unit
# suites use them), `locket`, then the provider (the Secret Service suites).
# `install -C` leaves an unchanged executable in place: a suite may be running it.
build: deps helper locket-binary provider pam

.PHONY: helper locket-binary provider
helper: deps
	@$(call FRESH_MAP,.build/helper/release/locket-postgres,locket-postgres)
	$(SWIFT) build $(HELPER_FLAGS) $(call LINK_MAP,locket-postgres) --product locket-postgres
	install -C -D -m 0755 .build/helper/release/locket-postgres $(HELPER)
	@$(call FRESH_MAP,.build/helper/release/locket-tpm,locket-tpm)
	$(SWIFT) build $(HELPER_FLAGS) $(call LINK_MAP,locket-tpm) --product locket-tpm
	install -C -D -m 0755 .build/helper/release/locket-tpm $(TPM_HELPER)

locket-binary: deps
	@# SwiftPM relinks for a changed source, not for a changed order file.
	@if [ link/startup.order -nt .build/ordered/release/locket ] || [ link/reproducible.ld -nt .build/ordered/release/locket ]; then rm -f .build/ordered/release/locket; fi
	@$(call FRESH_MAP,.build/ordered/release/locket,locket)
	@$(if $(LEAN_RUNTIME),:,echo "locket: the lean Swift runtime start-up is off: runtime.c was checked against Swift $(LEAN_RUNTIME_SWIFT).x, this is $(or $(SWIFT_VERSION),unknown)")
	$(SWIFT) build $(RELEASE_FLAGS) $(call LINK_MAP,locket) --product locket
	install -C -D -m 0755 .build/ordered/release/locket $(BIN)

provider: deps
	@$(call FRESH_MAP,.build/ordered/release/locket-secret-service,locket-secret-service)
	$(SWIFT) build $(RELEASE_FLAGS) $(call LINK_MAP,locket-secret-service) --product locket-secret-service
	install -C -D -m 0755 .build/ordered/release/locket-secret-service $(SECRET_SERVICE)

pam: $(PAM_MODULE)

$(PAM_MODULE): pam/pam_locket.c pam/run.c pam/user.c pam/pam_locket.h .build/pam/locket-path
	$(CC) $(PAM_CFLAGS) -DLOCKET_PATH='"$(BINDIR)/locket"' $(PAM_LDFLAGS) -o $@ pam/pam_locket.c pam/run.c pam/user.c -lpam

# The path compiled into the module, rewritten (and the module rebuilt) only when it changes.
.build/pam/locket-path: FORCE
	@mkdir -p .build/pam
	@echo '$(BINDIR)/locket' | cmp -s - $@ || echo '$(BINDIR)/locket' > $@

.PHONY: FORCE
FORCE:

# Unit tests run in-process; end-to-end tests run the release binary that
# users get, found through LOCKET_BIN.
# Every seed of the fuzz corpus goes through its target's checks in the XCTest
# run (FuzzCorpusTests, issue 6); the sanitizer build and mutations are
# `make fuzz` (FUZZ_SECONDS per target; FUZZ_SECONDS=600 for a long run): that
# build alone took longer than the rest of make test on 2 cores.
# The reliability suite runs its bounded versions here and in full under
# `make soak` (docs/RELIABILITY.md).
# Tests/run-tests runs each class in a process of its own (every test has its
# own sandbox; a class's fixture is made once), four at a time: most of an
# end-to-end test's time is waiting on processes, sleeps and fsync, so two
# workers kept 2 cores only ~1.35 busy. A process per test cost 548 CPU-s
# where a process per class costs 339 (issue 38; `Tests/test-costs` sums
# .build/test-times.tsv by class). It keeps every test's output in .build/xctest.log, shows a failed
# test's output on the console (`make test TEST_WORKERS=1 TEST_VERBOSE=1`:
# all of it, one test after another), and ends with one line "N passed,
# N failed, N skipped", each skipped test with its reason and each failed
# one. The reliability figures go to .build/reliability.log, printed at the end.
# The remote suites share one PostgreSQL server per run (SharedPostgres,
# docs/REMOTE.md "Tests"), each test in its own database.
FUZZ_SECONDS ?= 60
TEST_WORKERS ?= 4
# Up to two processes more while the machine's CPUs were more than half a CPU
# idle over the last second (and no build gate is closed): four kept a quiet
# 2-core machine ~1.7 CPUs busy (291 CPU-s in 172 s).
# None start on a machine others keep busy. With --workers 2 on this shared
# machine, a subset of 92 tests took 26.6 s instead of 36.9 (same CPU-s).
TEST_FILL ?= 2
TEST_VERBOSE ?=
# Suites that only `make soak` runs (with every other reliability suite):
# the power-loss check of the commands beyond add, update, delete, passwd
# --rotate, init, restore and racing writers (docs/RELIABILITY.md "Power loss").
SOAK_ONLY = EndToEndReliabilityPowerLossSoakTests
# The storage conformance suites (issue 38), run again against a remote
# keychain (SPEC §17, LOCKET_TEST_BACKEND=remote) and against one in memory
# (LOCKET_TEST_BACKEND=memory): those whose class sets `isConformanceSuite`.
CONFORMANCE = ^LocketCoreTests\.(QueryTests|UniquenessTests|UpdateTests|AppleAttributeTests|StorageConformanceTests)/
# Tests with a wall-clock limit of their own: their class starts first, and
# while one runs every other test process runs at nice 10 (--heavy), so that
# it has a core whenever it can use one and the others still take what it
# leaves. keychain-swift's suite (CompatAcceptanceTests) has ConcurrencyTests,
# which waits 30 s for ~6,000 keychain calls serialized by the Security
# module's lock, 10 CPU-s of the debug engine: beside three other workers at
# its own priority on 2 cores it took 29-44 s; beside four at nice 10, 16 s.
# (The class ran with one other process at most before: 11 s, but the compat
# package's build, in the class's first test, and the three suites held the
# whole run to two processes for 29 s.)
HEAVY = ^SecurityTests\.CompatAcceptanceTests/testKeychainSwiftPassesItsOwnTests$$
# The suites that run the release `locket` (LOCKET_BIN), and those that also
# run the provider beside it; the unit suites need only the helper.
NEEDS_LOCKET = ^(LocketCLITests|SecurityTests)\.
NEEDS_PROVIDER = ^LocketCLITests\.SecretService
# What the tests would otherwise prepare once on a clean clone, in the test
# phase, is started beside the debug build, whose LocketCore compile leaves a
# core idle for ~25 s: secretstorage's source distribution, which
# SecretServiceClientsEndToEndTests' case fetches when it is not in
# .build/secretstorage-sdist (issue 38): from PyPI's JSON API, 0.2 CPU-s;
# pip, its fallback, took 5-8 CPU-s and ~14-20 s.
# Only here, not in build-tests: it is the tests' data, not the build's. A
# failure is said in one line and left to that test (it tries again, and
# skips saying why); it never fails the build.
PREPARE_TESTS = { [ ! -x /usr/bin/python3 ] || /usr/bin/python3 Tests/Fixtures/secret-service/secretstorage_sdist.py .build/secretstorage-sdist </dev/null || :; }
# On a new machine make test-deps installs the tools the tests drive (chromium,
# keepassxc, gnome-keyring, PostgreSQL...): apt-get downloading and unpacking,
# mostly waiting on the network and the disk, before the build started. As
# root it runs beside the debug build instead (at BACKGROUND_NICE, raised
# with the rest when the build ends), its output in .build/test-deps.log and
# its one line said when the build is done; the tests wait for it. Nothing
# the build compiles or links comes from it (make deps installs that). As
# another user it stays a prerequisite: sudo may have to ask for a password,
# which a prompt in the middle of the build's output would hide.
TEST_DEPS_BESIDE = $(filter 0,$(shell id -u))
# On 2 cores a clean clone's make test is bound by CPU time: the tests' debug
# build (many small jobs) and the release build (one whole-module job per
# module, mostly one core) run side by side, and the unit suites start as
# soon as the debug build is done, one at a time at nice 10 while the release
# build's last minute runs alone, to fill the idle core. Measured on a clean
# clone: none beside the build 405-419 s, four 418 s (the build's `locket`
# took 285 s instead of ~176: nice does not keep them off its core), one 382 s.
test: deps $(if $(TEST_DEPS_BESIDE),,test-deps)
	@mkdir -p .build && rm -f .build/reliability.log .build/xctest.log .build/test-times.tsv .build/test-deps.log .build/*.status
	@$(MAKE) --no-print-directory pam
	@nice -n $(BACKGROUND_NICE) sh -c '$(MAKE) --no-print-directory helper; echo $$? > .build/helper.status; \
	  $(MAKE) --no-print-directory locket-binary; echo $$? > .build/locket.status; \
	  $(MAKE) --no-print-directory provider; echo $$? > .build/provider.status' & release=$$!; \
	deps=; $(if $(TEST_DEPS_BESIDE),nice -n $(BACKGROUND_NICE) $(MAKE) --no-print-directory test-deps </dev/null >.build/test-deps.log 2>&1 & deps=$$!;) \
	background="$$release $$deps"; \
	$(PREPARE_TESTS) & prepared=$$!; \
	( $(BUILD_TESTS) ); built=$$?; wait $$prepared; \
	[ -z "$$deps" ] || { wait $$deps; sed -n 's|^make test-deps: .*|& (.build/test-deps.log)|p' .build/test-deps.log; }; \
	if [ $$built -ne 0 ]; then wait $$release; exit $$built; fi; \
	LOCKET_RELIABILITY_LOG=$(CURDIR)/.build/reliability.log LOCKET_BIN=$(CURDIR)/$(BIN) LOCKET_POSTGRES_HELPER=$(CURDIR)/$(HELPER) \
		LOCKET_TPM_HELPER=$(CURDIR)/$(TPM_HELPER) LOCKET_PAM_MODULE=$(CURDIR)/$(PAM_MODULE) Tests/run-tests --log .build/xctest.log --times .build/test-times.tsv --workers $(TEST_WORKERS) --fill $(TEST_FILL) --gated-workers 1 $(if $(TEST_VERBOSE),--verbose) --show .build/reliability.log \
		--skip '$(SOAK_ONLY)' --heavy '$(HEAVY)' \
		--wait .build/helper.status --gate '$(NEEDS_LOCKET)' .build/locket.status --gate '$(NEEDS_PROVIDER)' .build/provider.status \
		--again '$(CONFORMANCE)' LOCKET_TEST_BACKEND=remote --again '$(CONFORMANCE)' LOCKET_TEST_BACKEND=memory \
		$$($(SWIFT) build --show-bin-path)/locketPackageTests.xctest; \
	status=$$?; wait $$release; exit $$status

# The tests' debug build as make test builds it (the suites one at a time:
# Tests/run-tests --filter RE $$(swift build --show-bin-path)/locketPackageTests.xctest).
build-tests: deps
	@$(BUILD_TESTS)

fuzz:
	fuzz/run $(FUZZ_SECONDS)

# SPEC §19: a new package outside the repository, depending on this checkout
# by path, and by version on a clone of HEAD tagged 0.1.0
# (`.package(url: "file://...", from: "0.1.0")`, refused by SwiftPM if
# Package.swift had unsafeFlags), with the Security product on Linux only,
# builds a program in Apple's spellings and runs it (SecurityTests'
# ExternalPackageTests). Apart from `make test` (.ci/run runs it after):
# on a clean clone each is a whole debug build of the engine.
.PHONY: package-check
package-check: deps
	@$(BUILD_TESTS)
	LOCKET_PACKAGE_CHECK=1 Tests/run-tests --workers 1 --log .build/package-check.log --filter 'ExternalPackageTests' \
		$$($(SWIFT) build --show-bin-path)/locketPackageTests.xctest

install: build
	@$(MAKE) --no-print-directory install-files

# make install's files from what make build built: `make deb` and `make
# release` build once and install twice (each `swift build` of an up-to-date
# product still takes seconds to plan).
install-files: pam
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -s -m 0755 -v $(BIN) $(DESTDIR)$(BINDIR)/locket
	install -d $(DESTDIR)$(LIBEXECDIR)/locket
	install -s -m 0755 -v $(HELPER) $(DESTDIR)$(LIBEXECDIR)/locket/locket-postgres
	install -s -m 0755 -v $(TPM_HELPER) $(DESTDIR)$(LIBEXECDIR)/locket/locket-tpm
	install -s -m 0755 -v $(SECRET_SERVICE) $(DESTDIR)$(LIBEXECDIR)/locket/locket-secret-service
	ln -sfn locket $(DESTDIR)$(BINDIR)/git-credential-locket
	ln -sfn locket $(DESTDIR)$(BINDIR)/docker-credential-locket
	install -m 0644 -v man/locket.1 $(DESTDIR)$(MANDIR)/man1/locket.1
	ln -sfn locket.1 $(DESTDIR)$(MANDIR)/man1/git-credential-locket.1
	ln -sfn locket.1 $(DESTDIR)$(MANDIR)/man1/docker-credential-locket.1
	install -m 0644 -v completions/locket.bash $(DESTDIR)$(BASHCOMPDIR)/locket
	install -m 0644 -v completions/_locket $(DESTDIR)$(ZSHCOMPDIR)/_locket
	install -m 0644 -v completions/locket.fish $(DESTDIR)$(FISHCOMPDIR)/locket.fish
	install -d $(DESTDIR)$(PAMDIR) $(DESTDIR)$(SYSTEMDUSERUNITDIR) $(DESTDIR)$(LOCKETDATADIR)
	install -s -m 0644 -v $(PAM_MODULE) $(DESTDIR)$(PAMDIR)/pam_locket.so
	sed 's|@BINDIR@|$(BINDIR)|g' dist/locket-secret-service.service > .build/locket-secret-service.service
	install -m 0644 -v .build/locket-secret-service.service $(DESTDIR)$(SYSTEMDUSERUNITDIR)/locket-secret-service.service
	sed 's|@BINDIR@|$(BINDIR)|g' dist/org.freedesktop.secrets.service > .build/org.freedesktop.secrets.service
	install -m 0644 -v .build/org.freedesktop.secrets.service $(DESTDIR)$(LOCKETDATADIR)/org.freedesktop.secrets.service
	install -d $(DESTDIR)$(PORTALDIR)
	install -m 0644 -v dist/locket.portal $(DESTDIR)$(PORTALDIR)/locket.portal

uninstall:
	rm -vf $(DESTDIR)$(LIBEXECDIR)/locket/locket-postgres $(DESTDIR)$(LIBEXECDIR)/locket/locket-tpm \
		$(DESTDIR)$(LIBEXECDIR)/locket/locket-secret-service
	-rmdir $(DESTDIR)$(LIBEXECDIR)/locket 2>/dev/null
	rm -vf $(DESTDIR)$(BINDIR)/locket $(DESTDIR)$(BINDIR)/git-credential-locket $(DESTDIR)$(BINDIR)/docker-credential-locket \
		$(DESTDIR)$(MANDIR)/man1/locket.1 $(DESTDIR)$(MANDIR)/man1/git-credential-locket.1 $(DESTDIR)$(MANDIR)/man1/docker-credential-locket.1 \
		$(DESTDIR)$(BASHCOMPDIR)/locket $(DESTDIR)$(ZSHCOMPDIR)/_locket $(DESTDIR)$(FISHCOMPDIR)/locket.fish \
		$(DESTDIR)$(PAMDIR)/pam_locket.so $(DESTDIR)$(SYSTEMDUSERUNITDIR)/locket-secret-service.service \
		$(DESTDIR)$(LOCKETDATADIR)/org.freedesktop.secrets.service $(DESTDIR)$(PORTALDIR)/locket.portal
	-rmdir $(DESTDIR)$(LOCKETDATADIR) 2>/dev/null

# Releases (SPEC §10, docs/PACKAGING.md). One version, the one `locket
# --version` prints (CommandTable.version); the package, the tarball and the
# man page take it from there, and dist/deb/build checks that they agree.
# Every timestamp in them is the commit's (SOURCE_DATE_EPOCH), so two
# builds of one commit give the same bytes.
VERSION := $(shell sed -n 's/^ *public static let version = "\(.*\)"$$/\1/p' Sources/LocketCLI/CommandTable.swift)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
DISTDIR ?= .build/dist
DEB_STAGE = .build/deb/root
TARBALL_STAGE = .build/tarball/root
TARBALL_PREFIX = /usr/local

# The package is what `make install` installs, with PREFIX=/usr and zsh's
# vendor directory, nothing listed a second time (dist/deb/build adds the
# documents and the control file, Depends/Recommends from dpkg-shlibdeps).
deb: build
	rm -rf $(DEB_STAGE)
	$(MAKE) --no-print-directory install-files DESTDIR=$(CURDIR)/$(DEB_STAGE) PREFIX=/usr ZSHCOMPDIR=/usr/share/zsh/vendor-completions >/dev/null
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) LINK_MAPS=$(CURDIR)/$(LINK_MAPS) dist/deb/build $(DEB_STAGE) $(VERSION) $(DISTDIR)

# The package, a tarball of the static executables (installed under
# /usr/local, the prefix a tarball is unpacked over) and SHA256SUMS.
release: deb
	rm -rf $(TARBALL_STAGE)
	$(MAKE) --no-print-directory install-files DESTDIR=$(CURDIR)/$(TARBALL_STAGE) PREFIX=$(TARBALL_PREFIX) >/dev/null
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) dist/tarball $(TARBALL_STAGE) $(TARBALL_PREFIX) $(VERSION) $(DISTDIR)
	cd $(DISTDIR) && sha256sum locket_$(VERSION)_*.deb locket-$(VERSION)-linux-*.tar.gz > SHA256SUMS
	@cat $(DISTDIR)/SHA256SUMS

# lintian on the package, then piuparts in a fresh Debian chroot with no
# Swift toolchain: install, the README's tour, secret-tool and git through
# locket, remove, purge, nothing left behind, the user's keychains kept; the
# tarball's locket runs the tour there too (Tests/Package/run). Slow (a
# chroot): .ci/run calls it after make test. The chroot's base is cached in
# .build/package-test.
package-test: release
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) Tests/Package/run $(DISTDIR) $(VERSION)

# Two builds of this commit, this checkout's and a clone's in another
# directory, compared (docs/PACKAGING.md "Reproducible"): a whole second
# release build, so not part of make test or CI.
repro-check: release
	Tests/Package/repro-check $(DISTDIR) $(VERSION)

bench: build
	bench/find-instructions --budget
	bench/run
	bench/lookup-floor
	bench/keyuse
	bench/remote
	bench/secret-service
	bench/chromium
	bench/session
	bench/secitem
	bench/tpm

clean:
	rm -rf .build

# The reliability suite's long versions (issue 6, docs/RELIABILITY.md):
# LOCKET_SOAK=1 runs every count and duration at 10 times its full size, 50
# times what `make test` runs; the backup round trips at their full
# 100 k items (`make test` runs 20 k: the same checks, flat memory to a
# coarser grain); the many-items test at 1 M (`make test`: 10 k) and the
# Security module's eight threads at 1,000 operations each (`make test`: 250);
# passwd killed in 16 rounds (`make test`: 8); the Secret Service's session
# flood at 500 connections of 20 programs requesting 100,000 sessions (`make test`: 18 x 260);
# the password generator's chi-square test at 1,000,000 characters a set
# (`make test`: 400,000, against the same once-in-a-million bound); key
# generation at every RSA size, 3,072 and 4,096 bits too (`make test`: 2,048,
# and the other two names parsed).
.PHONY: soak
soak: build
	LOCKET_SOAK=1 LOCKET_BIN=$(CURDIR)/$(BIN) LOCKET_POSTGRES_HELPER=$(CURDIR)/$(HELPER) $(SWIFT) test --disable-swift-testing \
		--filter 'Reliability|RemoteFaultEndToEndTests|BackupRoundTripTests|BackupEndToEndTests/testRoundTrip|SecurityConcurrencyTests|EndToEndPasswdTests/testKilledAtAnyInstant|SecretServiceLimitsTests/testSessionFlood|PasswordGeneratorTests/testUniformDistribution|KeysValueTests/testGeneratedKeysOfEveryType|EndToEndKeysTests/testGenerateStoresTheKeyAndPrintsItsPublicKey'

# Peers (issue 7): pass, secret-tool (gnome-keyring), python keyring, each
# with 1,000 secrets, timed next to locket. Installs with apt and pip.
.PHONY: bench-peers
bench-peers: build
	bench/peers
