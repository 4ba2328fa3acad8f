# mk/sanitize.mk -- the test suite under sanitizers and valgrind (issue 6, item 1).
#   make asan      ASan+UBSan build in build-asan/ (-fno-sanitize-recover=all);
#                  runs the whole suite (unit, golden, integration) via tests/run.sh
#   make tsan      TSan build in build-tsan/; runs the unit tests and the
#                  integration scripts (the daemon's threads: MHD, libuv loop
#                  and pool)
#   make valgrind  memcheck over every unit test binary and a short daemon
#                  session (tests/ci/valgrind.sh), on the normal build/
# Each ends with "N passed, N failed". tests/ci/sanitize.sh runs all three.
#
# Both go through `make test` with BUILD, CC and SAN set, so whatever `make
# test` builds and runs (unit tests, fuzz corpus replays, golden, integration)
# runs instrumented; the sanitizer runtime options are exported to all of it.
#
# Every sanitizer report goes to a file under $(BUILD_X)/san-reports/ (log_path)
# as well as failing the process that hit it: a daemon that reports an error
# and is then killed by a test (or whose stderr a test swallows) still fails
# the target, because tests/ci/sanreport.sh fails on any report file left.
#
# clang by default: its -fsanitize=undefined also checks float-cast-overflow
# (double -> integer conversions out of range), which gcc's does not.

SAN_CC      ?= $(shell command -v clang >/dev/null 2>&1 && echo clang || echo gcc)
ASAN_BUILD  ?= build-asan
TSAN_BUILD  ?= build-tsan
ASAN_SAN     = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TSAN_SAN     = -fsanitize=thread -fno-omit-frame-pointer
SAN_OPT     ?= -O1
# TSan runs the unit tests and these scripts (tests/run.sh's RUN_SCRIPTS); the
# golden suite drives the single-threaded CLI, which TSan has nothing to check in.
TSAN_SCRIPTS ?= tests/integration/*.sh

ASAN_REPORTS = $(CURDIR)/$(ASAN_BUILD)/san-reports
TSAN_REPORTS = $(CURDIR)/$(TSAN_BUILD)/san-reports
ASAN_ENV = ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:log_path=$(ASAN_REPORTS)/asan \
           UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(ASAN_REPORTS)/ubsan \
           LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
           LOAD_RSS_SLACK_KB=524288
# LOAD_RSS_SLACK_KB: under ASan, tests/integration/load.sh's RSS bound measures
# the sanitizer, not mfud: freed blocks sit in ASan's quarantine (256 MiB by
# default) and shadow pages stay mapped (seen: +296 MiB after the 5 s run).
# The bound stays 64 MiB in the plain run; leaks under ASan are
# LeakSanitizer's job (the daemon's SIGTERM exit runs it). Under TSan the
# bound measures TSan too: its shadow memory (several bytes per byte of
# heap) and per-thread allocator caches (seen: +83 MiB for the code of
# commit 82d0c6a, which CI had passed at +<64 MiB on another machine), so
# it gets 256 MiB; the plain run keeps measuring mfud.
# MFU_TEST_QUICK: the tests that read it run a smaller workload under TSan:
# test_oom walks every 8th allocation failure (single-threaded, nothing for
# TSan to watch; the full walk runs under ASan), test_search's threaded
# search runs half its batch range (its threads and their merge run the
# same; the full range runs plain and under ASan).
TSAN_ENV = MFU_TEST_QUICK=1 TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1:history_size=4:suppressions=$(CURDIR)/tests/tsan.supp:log_path=$(TSAN_REPORTS)/tsan \
           LOAD_RSS_SLACK_KB=262144

.PHONY: asan tsan valgrind sanitize

asan:
	@rm -rf $(ASAN_REPORTS); mkdir -p $(ASAN_REPORTS)
	@echo "asan: $(SAN_CC) $(ASAN_SAN)"
	@st=0; $(ASAN_ENV) $(MAKE) --no-print-directory -j2 BUILD=$(ASAN_BUILD) CC=$(SAN_CC) OPT=$(SAN_OPT) \
	    SAN='$(ASAN_SAN)' test >$(ASAN_BUILD)/run.log 2>&1 || st=1; \
	grep -v -e '^$(SAN_CC) ' -e '^ar ' $(ASAN_BUILD)/run.log; \
	sh tests/ci/sanreport.sh asan $(ASAN_REPORTS) $(ASAN_BUILD)/run.log || st=1; exit $$st

# TSan maps memory at fixed addresses; with a kernel's vm.mmap_rnd_bits above
# 28 the runtime of clang 14 / gcc 12 dies at start ("unexpected memory
# mapping"), so the runs go through setarch -R (no ASLR) where it works.
tsan:
	@rm -rf $(TSAN_REPORTS); mkdir -p $(TSAN_REPORTS)
	@echo "tsan: $(SAN_CC) $(TSAN_SAN)"
	@st=0; norand=""; setarch "$$(uname -m)" -R true 2>/dev/null && norand="setarch $$(uname -m) -R"; \
	$(TSAN_ENV) RUN_SCRIPTS='$(TSAN_SCRIPTS)' $$norand $(MAKE) --no-print-directory -j2 BUILD=$(TSAN_BUILD) \
	    CC=$(SAN_CC) OPT=$(SAN_OPT) SAN='$(TSAN_SAN)' test >$(TSAN_BUILD)/run.log 2>&1 || st=1; \
	grep -v -e '^$(SAN_CC) ' -e '^ar ' $(TSAN_BUILD)/run.log; \
	sh tests/ci/sanreport.sh tsan $(TSAN_REPORTS) $(TSAN_BUILD)/run.log || st=1; exit $$st

valgrind: all $(TEST_BIN)
	@BUILD=$(BUILD) sh tests/ci/valgrind.sh $(TEST_BIN)

sanitize:
	@sh tests/ci/sanitize.sh
