#!/usr/bin/env python3
"""The file is the truth: seeded CSVs loaded with `loader --csv` into every
backend, each row looked up over HTTP and held to what Python's csv module
reads from the file.

  csvtruth.py load  --seed S --dir D --conf C --loader CMD --backends LIST
  csvtruth.py check --dir D --port P --backends LIST

`load` writes the CSVs of seed S into D (headers that are alike but for
case, spaces, punctuation or Unicode normalization; numbers at every edge;
empty and quoted-empty fields, UTF-8, CRLF), loads each with
`CMD --csv FILE --key HEADER` (and holds the loads that must be refused to
file:1), and prints `datasets: NAME,...` for the server. `check` asks the
server (on 127.0.0.1:P) for every row of every dataset on every backend,
pooled and per-request (and pipelined on pg), and compares: the answer's
field names are the header's texts, in order; each value is the file's,
byte for byte, or (a JSON number of a real column) the one normalization
docs/LOADER.md states: the shortest decimal that reads back as the same
double, laid out as JavaScript writes numbers, and the same number. An
empty field is null, or "" when it was quoted: Python's csv module reads
both as '', so which one the file held is taken from the generator.

The first difference ends the run (exit 1) with the seed, the file, its
line, the backend and the field; ZB_TRUTH_SEED=S replays it.
"""
import argparse
import csv
import http.client
import json
import os
import random
import shlex
import subprocess
import sys
import urllib.parse
from decimal import Decimal, InvalidOperation

I64_MAX = 2**63 - 1

# Headers alike once case, spaces, punctuation or normalization are set
# aside: each group gives distinct bytes that a "clean the name" rule folds
# into one.
HEADER_GROUPS = [
    ["Name", "name", "NAME", "name ", " name", "na me", "na_me", "na-me", "na.me"],
    ["a b", "a_b", "a-b", "A B", "a__b"],
    ["caf\u00e9", "cafe\u0301", "CAF\u00c9"],
    ["\u540d\u524d", "\u540d \u524d", "\uff4e\uff41\uff4d\uff45"],
    ["Stra\u00dfe", "STRASSE", "strasse"],
    ["id", "ID", "Id", "i.d."],
    ["1st", "c_1st", "_1st"],
    ["price", "Price ($)", "price_"],
    ["quote\"d", "comma,d", "semi;colon", "tab\there", "line\nbreak"],
    ["", "_", "__"],
    ["\U0001f600", "\u00e9t\u00e9", "\u0416\u0443\u043a"],
]

# Numbers at every edge, in one column: it must stay text, each value as
# written.
EDGES = [
    str(2**63 + 1), str(2**63 - 1), str(-2**63), str(-2**63 - 1), "-0", "-0.0", "1e308",
    "0.30000000000000004", "007", "+5", "NaN", "Infinity", "-Infinity", "1e400", "0x10",
    " 5", "5 ", "1,5", ".5", "5.", "1e5", "1E5", "00", "0", "-00.5", "1.23456789012345678",
    "4.9e-324", "1_000",
]

REALS = [
    "671.00", "0.30000000000000004", "1.2345678901234567", "1e308", "-2.5", "0.1", "100",
    "1e-7", "1.7976931348623157e308", "2.2250738585072014e-308", "123456789012345680",
    "1E21", "0.000001", "1e+21", "12.50", "-0.001", "3.14159", "9007199254740992",
]

TEXT_BITS = [
    "a", "Z", " ", ",", "\"", "\r\n", "\n", "\t", "\\", "/", "%", "?", "#", "'", ";",
    "\u3042", "\u6f22", "\u00e9", "e\u0301", "\U0001f600", "\u200b", "x",
    "null", "NULL", "0", "-", "{", "}",
]


def js_number(x):
    """x as the answers write a real: the shortest digits, laid out as
    JavaScript's Number::toString lays them out (negative zero is 0)."""
    if x == 0:
        return "0"
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    d = "".join(map(str, digits)).rstrip("0") or "0"
    exp += len("".join(map(str, digits))) - len(d)
    k, n = len(d), exp + len(d)
    if k <= n <= 21:
        s = d + "0" * (n - k)
    elif 0 < n <= 21:
        s = d[:n] + "." + d[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * -n + d
    else:
        e = n - 1
        s = d[0] + ("." + d[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return ("-" if sign else "") + s


class Num:
    """A JSON number, kept as the answer wrote it."""
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def key_values(rng, n):
    style = rng.choice(["int", "text", "unicode", "padded", "odd"])
    out = []
    for i in range(n):
        if style == "int":
            out.append(str(i * 7 + 1))
        elif style == "text":
            out.append("k%d" % i)
        elif style == "unicode":
            out.append("\u30ad\u30fc%d\u00e9" % i)
        elif style == "padded":
            out.append(rng.choice(["k %d", "k%d ", " k%d", "%03d"]) % i)
        else:
            out.append(rng.choice(["a/b%d", "50%%%d", "q?%d", "h#%d", "c,%d", "\"q\"%d",
                                   "\U0001f600%d"]) % i)
    return out


def column_values(rng, kind, n):
    """n values of a column of this kind (None: an unquoted empty field)."""
    if kind == "int":
        pool = [str(I64_MAX), str(-2**63), "0", "-1"]
        vals = [rng.choice(pool) if rng.random() < 0.2 else str(rng.randint(-10**12, 10**12))
                for _ in range(n)]
    elif kind == "big":
        vals = [str(rng.randint(-10**6, 10**6)) for _ in range(n)]
        vals[rng.randrange(n)] = rng.choice([str(2**63), str(-2**63 - 1), str(2**64),
                                             "99999999999999999999"])
    elif kind == "real":
        vals = []
        for _ in range(n):
            r = rng.random()
            if r < 0.4:
                vals.append(rng.choice(REALS))
            elif r < 0.7:
                vals.append("%.*f" % (rng.randint(0, 6), rng.uniform(-1e4, 1e4)))
            else:
                vals.append(repr(rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)))
    elif kind == "mixed":
        vals = [rng.choice(EDGES) for _ in range(n)]
    elif kind == "text":
        vals = ["".join(rng.choice(TEXT_BITS) for _ in range(rng.randint(0, 12)))
                for _ in range(n)]
    else:  # sparse
        vals = [rng.choice([None, None, "", "x", "0", "\u3042"]) for _ in range(n)]
    if kind in ("int", "big", "real", "mixed", "text"):
        for _ in range(n // 8):
            vals[rng.randrange(n)] = None   # NULLs in any column but the key
    return vals


def pick_headers(rng, ncols):
    headers = []
    groups = rng.sample(HEADER_GROUPS, len(HEADER_GROUPS))
    while len(headers) < ncols:
        for g in groups:
            h = rng.choice(g)
            if h not in headers and len(headers) < ncols:
                headers.append(h)
    # A header that spans lines or holds a ';' never comes first: the
    # loader guesses the delimiter from the first line.
    first = next(i for i, h in enumerate(headers) if "\n" not in h and ";" not in h
                 and "\t" not in h)
    headers.insert(0, headers.pop(first))
    return headers


def field_text(rng, v, must_quote=False):
    if v is None:
        return ""
    if must_quote or v == "" or any(c in v for c in ",\"\r\n") or rng.random() < 0.15:
        return '"' + v.replace('"', '""') + '"'
    return v


def write_csv(rng, path, headers, rows):
    eol = rng.choice(["\r\n", "\n"])
    lines = [",".join(field_text(rng, h) for h in headers)]
    lines += [",".join(field_text(rng, v) for v in row) for row in rows]
    text = eol.join(lines) + (eol if rng.random() < 0.8 else "")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(("\ufeff" if rng.random() < 0.2 else "") + text)


def generate(seed, directory):
    """The cases of seed: loads that must succeed and loads that must be
    refused, their CSVs written into directory."""
    rng = random.Random(seed)
    cases = []
    kinds_all = ["int", "big", "real", "mixed", "text", "sparse"]
    for i in range(6):
        ncols = rng.randint(3, 8) if i else 7
        headers = pick_headers(rng, ncols)
        kinds = kinds_all[:] if i == 0 else [rng.choice(kinds_all) for _ in range(ncols - 1)]
        key_at = rng.randrange(ncols)
        nrows = rng.randint(12, 30)
        cols, k = [], iter(kinds)
        for c in range(ncols):
            cols.append(key_values(rng, nrows) if c == key_at
                        else column_values(rng, next(k), nrows))
        rows = [[cols[c][r] for c in range(ncols)] for r in range(nrows)]
        name = "zt_truth_%d" % i
        path = os.path.join(directory, name + ".csv")
        write_csv(rng, path, headers, rows)
        cases.append({"name": name, "file": path, "key": headers[key_at], "key_at": key_at,
                      "headers": headers, "rows": rows, "refused": None})
    # Two headers alike byte for byte: no answer could tell them apart.
    h = rng.choice(HEADER_GROUPS[0][:3])
    path = os.path.join(directory, "zt_truth_twice.csv")
    write_csv(rng, path, ["id", h, "x", h], [["1", "a", "b", "c"], ["2", "d", "e", "f"]])
    cases.append({"name": "zt_truth_twice", "file": path, "key": "id",
                  "refused": "columns 2 and 4 are both named"})
    # A key alike a header but for case: named byte for byte or refused.
    path = os.path.join(directory, "zt_truth_near.csv")
    write_csv(rng, path, ["Name", "value"], [["a", "1"], ["b", "2"]])
    cases.append({"name": "zt_truth_near", "file": path, "key": "name",
                  "refused": "key: no column 'name' in the header, byte for byte (near: 'Name'"})
    return cases


def fail(seed, msg):
    print("csvtruth: seed %s (replay: ZB_TRUTH_SEED=%s make test TESTS=csvtruth): %s"
          % (seed, seed, msg))
    sys.exit(1)


def load(args):
    cases = generate(args.seed, args.dir)
    loader = shlex.split(args.loader)
    served = []
    for case in cases:
        cmd = loader + ["-q", "--conf", args.conf, "--csv", case["file"], "--key", case["key"],
                        "--name", case["name"], "--backend", args.backends, "--allow-shrink"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = p.stdout.decode("utf-8", "replace")
        if case["refused"]:
            where = case["file"] + ":1"
            if p.returncode == 0 or where not in out or case["refused"] not in out:
                fail(args.seed, "%s: --key %r: expected a refusal naming %s (%s), got exit %d: %s"
                     % (case["file"], case["key"], where, case["refused"], p.returncode, out))
            continue
        if p.returncode != 0:
            fail(args.seed, "%s: --key %r: exit %d: %s" % (case["file"], case["key"],
                                                           p.returncode, out))
        served.append(case)
    with open(os.path.join(args.dir, "manifest.json"), "w") as f:
        json.dump({"seed": args.seed, "cases": served}, f)
    print("datasets: " + ",".join(c["name"] for c in served))


def file_rows(path):
    """The header and the records as Python's csv module reads the file,
    each record with the line it starts on."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows, line = [], reader.line_num + 1
        for rec in reader:
            rows.append((line, rec))
            line = reader.line_num + 1
    return header, rows


def same_value(want, got, quoted_empty):
    """Whether the answer's value got is the file's want (csv's text)."""
    if want == "":
        return got == ("" if quoted_empty else None)
    if isinstance(got, str):
        return got == want
    if isinstance(got, Num):
        if got.text == want:
            return True
        try:
            return got.text == js_number(float(want)) and Decimal(got.text) == Decimal(want)
        except (ValueError, InvalidOperation):
            return False
    return False


def show(v):
    return "null" if v is None else v.text if isinstance(v, Num) else json.dumps(v,
                                                                              ensure_ascii=False)


class Client:
    """Keep-alive GETs to 127.0.0.1:port."""
    def __init__(self, port):
        self.port, self.conn = port, None

    def get(self, path):
        for attempt in (0, 1):
            try:
                if not self.conn:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, OSError):
                self.conn = None
                if attempt:
                    raise


def check(args):
    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    seed = manifest["seed"]
    client = Client(args.port)
    asked = 0
    for case in manifest["cases"]:
        header, rows = file_rows(case["file"])
        # The generator's own check: csv reads what it wrote.
        written = [["" if v is None else v for v in r] for r in case["rows"]]
        if header != case["headers"] or [r for _, r in rows] != written:
            fail(seed, "%s: Python's csv module does not read what the generator wrote"
                 % case["file"])
        at = case["key_at"]
        for backend in args.backends.split(","):
            strategies = ["pooled", "per-request"] + (["pipelined"] if backend == "pg" else [])
            for (line, rec), made in zip(rows, case["rows"]):
                for strategy in strategies:
                    path = "/%s/%s/%s?strategy=%s" % (case["name"], backend,
                                                      urllib.parse.quote(rec[at], safe=""),
                                                      strategy)
                    status, body = client.get(path)
                    asked += 1
                    where = "%s:%d, backend %s (%s)" % (case["file"], line, backend, strategy)
                    if status != 200:
                        fail(seed, "%s: GET %s: %d %s" % (where, path, status, body[:300]))
                    answer = json.loads(body, object_pairs_hook=lambda pairs: pairs,
                                        parse_int=Num, parse_float=Num)
                    got = dict(answer)["rows"]
                    if len(got) != 1:
                        fail(seed, "%s: %d rows for key %r" % (where, len(got), rec[at]))
                    names = [k for k, _ in got[0]]
                    if names != header:
                        fail(seed, "%s: the answer's fields %s, the header's %s"
                             % (where, json.dumps(names, ensure_ascii=False),
                                json.dumps(header, ensure_ascii=False)))
                    for c, (name, value) in enumerate(got[0]):
                        if not same_value(rec[c], value, made[c] == ""):
                            fail(seed, "%s: field %s: the file has %s%s, the answer %s\n"
                                 "  the file's row: %s\n  the answer:     %s"
                                 % (where, json.dumps(name, ensure_ascii=False),
                                    json.dumps(rec[c], ensure_ascii=False),
                                    " (quoted)" if made[c] == "" else "", show(value),
                                    json.dumps(rec, ensure_ascii=False),
                                    body.decode("utf-8", "replace")))
    print("csvtruth: seed %s: %d datasets, %d lookups, every row as in its file"
          % (seed, len(manifest["cases"]), asked))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("--seed", type=int, required=True)
    lp.add_argument("--dir", required=True)
    lp.add_argument("--conf", required=True)
    lp.add_argument("--loader", required=True)
    lp.add_argument("--backends", required=True)
    cp = sub.add_parser("check")
    cp.add_argument("--dir", required=True)
    cp.add_argument("--port", type=int, required=True)
    cp.add_argument("--backends", required=True)
    args = ap.parse_args()
    load(args) if args.cmd == "load" else check(args)


if __name__ == "__main__":
    main()
