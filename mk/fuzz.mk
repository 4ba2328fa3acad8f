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
# (the profiler-trace reader POST /traces exposes: any bytes, plain or gzip).

FUZZ_TARGETS  := request cachekey search trace
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

# The replay drivers: the normal compiler and flags ($(CC), $(SAN) if set).
$(BUILD)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(FUZZ_DEPS) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itests/fuzz tests/fuzz/replay.c $< $(LIBS) $(LDLIBS_API) -lm -o $@

# The libraries once more, built by clang with coverage instrumentation and
# sanitizers, in their own build directory (a recursive make of this Makefile).
fuzz-libs:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD)/lib CC=$(FUZZ_CC) OPT=-O1 \
	    SAN="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	    $(FUZZ_BUILD)/lib/libmfuapi.a $(FUZZ_BUILD)/lib/libmfudb.a $(FUZZ_BUILD)/lib/libmfucore.a

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DEPS) fuzz-libs
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g \
	    -fsanitize=fuzzer $(FUZZ_SAN) -Icore -Iapi -Itests/fuzz $< \
	    $(FUZZ_BUILD)/lib/libmfuapi.a $(FUZZ_BUILD)/lib/libmfucore.a $(LDLIBS_API) -lm -o $@

fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	@BUILD=$(BUILD) FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) \
	    sh tests/fuzz/run.sh $(FUZZ_TARGETS)
