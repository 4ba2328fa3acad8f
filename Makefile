# mfud -- the one build entry point.
#   make          build build/mfu (CLI) and build/mfud (daemon)
#   make test     build and run every test; ends with "N passed, N failed"
#   make run      install missing Debian packages if needed, build, serve on
#                 127.0.0.1:$MFUD_PORT (else $PORT, else 8080)
#   make bench    run the benchmarks under bench/
#
# Sources are picked up by wildcard: core/*.c -> libmfucore.a (C11 + libm only),
# api/*.c -> libmfuapi.a (jansson), db/*.c -> libmfudb.a (sqlite3),
# server/*.c -> build/mfud; cli/*.c -> build/mfu (the CLI: api only, no server).
# tests/unit/test_*.c each become one test binary linked with all libraries.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O3   # -O3: the search 4-10 % faster than -O2 (bench/search A/B); -std=c11 keeps FP contraction off, so answers are identical
SAN     ?=
CFLAGS  ?= $(OPT) -g
WARN     = -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wno-unused-parameter
ALLCFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) $(CFLAGS) $(SAN) -Icore -Iapi -Idb -Iserver -I$(BUILD)
LDLIBS_API = -ljansson -lz
# The PostgreSQL backend (db/pg.c, docs/storage.md) when libpq is there
# (Debian's libpq-dev, installed by docker/deps.sh build); without it the
# build still works and --db postgresql://... says it is not supported.
PQ_LIBS := $(shell pkg-config --libs libpq 2>/dev/null)
PQ_CFLAGS := $(if $(PQ_LIBS),-DMFU_HAVE_LIBPQ $(shell pkg-config --cflags libpq 2>/dev/null))
LDLIBS_SRV = -lmicrohttpd -luv -lsqlite3 $(PQ_LIBS) -lpthread
LDLIBS_ALL = $(LDLIBS_API) $(LDLIBS_SRV) -lm

CORE_SRC   := $(wildcard core/*.c)
API_SRC    := $(wildcard api/*.c)
DB_SRC     := $(wildcard db/*.c)
CLI_SRC    := $(wildcard cli/*.c)
CLI_OBJ    := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
SRV_SRC    := $(wildcard server/*.c)
TEST_SRC   := $(wildcard tests/unit/test_*.c)
BENCH_SRC  := $(wildcard bench/*.c)
PRESETS    := $(sort $(wildcard presets/models/*.json presets/hardware/*.json))

CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
API_OBJ  := $(API_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/presets_data.o
DB_OBJ   := $(DB_SRC:%.c=$(BUILD)/obj/%.o)
SRV_OBJ  := $(SRV_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

LIBS := $(BUILD)/libmfuapi.a $(BUILD)/libmfudb.a $(BUILD)/libmfucore.a

.PHONY: all test unit run bench clean deps
all: $(BUILD)/mfu $(if $(SRV_SRC),$(BUILD)/mfud)

$(BUILD)/obj/%.o: %.c $(wildcard core/*.h api/*.h db/*.h server/*.h cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -c $< -o $@

# The core must stay pure: C11 + libm, no third-party headers, no I/O. It
# is compiled as ISO C11 with its own headers only (no POSIX feature
# macros, no -I of api/, db/, server/): an include of anything else fails
# the build.
CORECFLAGS = -std=c11 $(WARN) $(CFLAGS) $(SAN) -Icore
$(BUILD)/obj/core/%.o: core/%.c $(wildcard core/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CORECFLAGS) -Wno-missing-prototypes -c $< -o $@

$(BUILD)/obj/db/pg.o $(BUILD)/obj/db/pg_conn.o: $(BUILD)/obj/db/%.o: db/%.c $(wildcard db/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(PQ_CFLAGS) -c $< -o $@

# server/openapi_blob.c embeds openapi.yaml (.incbin): rebuild it when the contract changes.
$(BUILD)/obj/server/openapi_blob.o: openapi.yaml

$(BUILD)/embed: tools/embed.c
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O1 -Wall -Wextra $< -o $@

$(BUILD)/presets_data.c: $(BUILD)/embed $(PRESETS)
	$(BUILD)/embed $(PRESETS) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/presets_data.o: $(BUILD)/presets_data.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(CFLAGS) $(SAN) -c $< -o $@

$(BUILD)/libmfucore.a: $(CORE_OBJ)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libmfuapi.a: $(API_OBJ)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libmfudb.a: $(DB_OBJ)
	@rm -f $@; ar rcs $@ $^

$(BUILD)/mfu: $(CLI_OBJ) $(LIBS)
	$(CC) $(SAN) $(CLI_OBJ) $(LIBS) $(LDLIBS_API) -lm -o $@

$(BUILD)/mfud: $(SRV_OBJ) $(LIBS)
	$(CC) $(SAN) $(SRV_OBJ) $(LIBS) $(LDLIBS_ALL) -o $@

# C-level tests of server modules (tests/unit/test_srv_*.c) link the
# server's objects (all but mfud.c's main, as the HTTP fuzz target does)
SRV_TEST_OBJ = $(filter-out $(BUILD)/obj/server/mfud.o,$(SRV_OBJ))
$(BUILD)/tests/test_srv_%: tests/unit/test_srv_%.c tests/check.h $(SRV_TEST_OBJ) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Wno-missing-field-initializers -Itests $< $(SRV_TEST_OBJ) $(LIBS) $(LDLIBS_ALL) $(SRV_TEST_WRAP) -o $@
# the job state machine's test catches the loop's answers where it would
# resume a connection (tests/unit/test_srv_jobs.c)
$(BUILD)/tests/test_srv_jobs: SRV_TEST_WRAP = -Wl,--wrap=srv_http_resume

# the allocation-failure walk (tests/unit/test_oom.c) takes over the api's
# malloc, calloc, realloc and strdup at link time
$(BUILD)/tests/test_oom: tests/unit/test_oom.c tests/check.h $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -rdynamic -Itests $< $(LIBS) $(LDLIBS_ALL) \
	    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup -o $@

# tests initialise the core's structs positionally, trailing fields left
# zero (their defaults): no warning for the omitted ones
$(BUILD)/tests/%: tests/unit/%.c tests/check.h $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Wno-missing-field-initializers -Itests $< $(LIBS) $(LDLIBS_ALL) -o $@

$(BUILD)/bench/%: bench/%.c $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $< $(LIBS) $(LDLIBS_ALL) -o $@

test: all $(TEST_BIN)
	@BUILD=$(BUILD) sh tests/run.sh $(TEST_BIN)

bench: all $(BENCH_BIN)
	@for b in $(BENCH_BIN); do $$b; done
	@if [ -x bench/http ]; then BUILD=$(BUILD) bench/http; fi
	@if [ -x bench/replicas ]; then BUILD=$(BUILD) bench/replicas; fi

deps:
	@sh docker/deps.sh build

# The port: MFUD_PORT, else PORT, else 8080 (mfud's default); the database:
# MFUD_DB, else var/mfud.db. Both from the environment or make's command line
# (make run MFUD_PORT=9000); mfud reads the other MFUD_* variables itself.
run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p var
	@MFUD_PORT=$${MFUD_PORT:-$${PORT:-8080}} MFUD_DB=$${MFUD_DB:-var/mfud.db} exec $(BUILD)/mfud

clean:
	rm -rf $(BUILD)

# Further targets (sanitizers, fuzzing, ...) live in mk/*.mk.
-include $(wildcard mk/*.mk)
