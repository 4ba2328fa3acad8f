# mk/fuzz.mk -- libFuzzer targets (tests/fuzz/fuzz_*.c), their corpus replay
# in `make test`, and bounded fuzzing runs.
#
#   make test                       also builds $(BUILD)/fuzz/replay_<t> with $(CC)
#                                   (gcc) and replays tests/fuzz/corpus/<t>/
#                                   (tests/integration/fuzz_replay.sh)
#   make fuzz FUZZ_SECONDS=N        clang 14 -fsanitize=fuzzer,address,undefined:
#                                   each target fuzzed N seconds from its corpus;
#                                   new inputs go to $(BUILD)/fuzz-work/<t>/ (not
#                                   the repo); prints executions; fails on a crash
#   make fuzz-build                 only build the libFuzzer binaries
#
# Targets: request (parser + validator + HF import), cachekey (equal
# inputs => equal key), search (core search on bounded decoded inputs), trace
# (the profiler-trace reader POST /traces exposes: any bytes, plain or gzip),
# http (raw request streams over TCP to the daemon, started in-process).

FUZZ_TARGETS  := request cachekey search trace http
FUZZ_SECONDS  ?= 20
FUZZ_CC       ?= clang
FUZZ_BUILD    := $(BUILD)/fuzz-clang
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_REPLAY_BIN := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/replay_%)
FUZZ_BIN      := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_DEPS     := tests/fuzz/fuzz_util.h $(wildcard core/*.h api/*.h)

.PHONY: fuzz fuzz-build fuzz-replay-bins fuzz-libs
test: fuzz-replay-bins
fuzz-replay-bins: $(FUZZ_REPLAY_BIN)

# The http target runs the daemon in its own process: it links the server's
# objects, all of server/*.c but mfud.c (whose main() it replaces).
FUZZ_SRV_SRC  := $(filter-out server/mfud.c,$(SRV_SRC))
FUZZ_SRV_DEPS := $(wildcard server/*.h db/*.h)

# The replay drivers: the normal compiler and flags ($(CC), $(SAN) if set).
$(BUILD)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(FUZZ_DEPS) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itests/fuzz tests/fuzz/replay.c $< $(LIBS) $(LDLIBS_API) -lm -o $@

# http's: the same, plus the server objects and the daemon's libraries (an
# explicit rule, so it wins over the pattern above).
$(BUILD)/fuzz/replay_http: tests/fuzz/fuzz_http.c tests/fuzz/replay.c $(FUZZ_DEPS) $(FUZZ_SRV_DEPS) \
                           $(FUZZ_SRV_SRC:%.c=$(BUILD)/obj/%.o) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itests/fuzz tests/fuzz/replay.c $< $(FUZZ_SRV_SRC:%.c=$(BUILD)/obj/%.o) \
	    $(LIBS) $(LDLIBS_ALL) -o $@

# The libraries once more, built by clang with coverage instrumentation and
# sanitizers, in their own build directory (a recursive make of this Makefile);
# the server objects too, for the http target (one recursive make, so that
# parallel builds of several fuzz binaries never build into one directory
# twice at once).
fuzz-libs:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD)/lib CC=$(FUZZ_CC) OPT=-O1 \
	    SAN="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	    $(FUZZ_BUILD)/lib/libmfuapi.a $(FUZZ_BUILD)/lib/libmfudb.a $(FUZZ_BUILD)/lib/libmfucore.a \
	    $(FUZZ_SRV_SRC:%.c=$(FUZZ_BUILD)/lib/obj/%.o)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DEPS) fuzz-libs
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g \
	    -fsanitize=fuzzer $(FUZZ_SAN) -Icore -Iapi -Itests/fuzz $< \
	    $(FUZZ_BUILD)/lib/libmfuapi.a $(FUZZ_BUILD)/lib/libmfucore.a $(LDLIBS_API) -lm -o $@

$(FUZZ_BUILD)/fuzz_http: tests/fuzz/fuzz_http.c $(FUZZ_DEPS) $(FUZZ_SRV_DEPS) fuzz-libs
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g \
	    -fsanitize=fuzzer $(FUZZ_SAN) -Icore -Iapi -Idb -Iserver -Itests/fuzz $< \
	    $(FUZZ_SRV_SRC:%.c=$(FUZZ_BUILD)/lib/obj/%.o) $(FUZZ_BUILD)/lib/libmfuapi.a \
	    $(FUZZ_BUILD)/lib/libmfudb.a $(FUZZ_BUILD)/lib/libmfucore.a $(LDLIBS_ALL) -o $@

fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	@BUILD=$(BUILD) FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) \
	    sh tests/fuzz/run.sh $(FUZZ_TARGETS)
