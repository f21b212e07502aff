# ini-overlay.awk: a config made of a base config and only what differs.
#
#   awk -f scripts/lib/ini-overlay.awk OVERLAY BASE > OUT
#
# OVERLAY is ini text of the differences:
#   - its lines before the first section replace BASE's opening comment;
#   - [SECTION] of BASE: each `key = value` replaces BASE's line of that key
#     (with its indented continuation lines), or is added at the section's
#     end; `key =` with no value drops the key;
#   - [NEW < SECTION]: a section BASE does not have, made from BASE's
#     SECTION with SECTION's overlay keys, then NEW's own, applied; it comes
#     after BASE's sections.
# Every section of BASE is kept, in BASE's order, with its comments. What
# scripts/lab writes its app host's config with (conf/zipbench.conf plus
# the lab's addresses), so the two never drift apart.

function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }

# The key of a `key = value` line at column 0, "" for any other line.
function key_of(line) {
    if (line !~ /^[A-Za-z0-9_.]+[ \t]*=/) return ""
    return trim(substr(line, 1, index(line, "=") - 1))
}

# Prints section NAME from BASE's section SRC with the overlays of SRC and
# NAME (NAME's winning), then any overlay keys SRC lacks.
function emit(name, src,    j, line, k, skipping, v, i, out, n, l, sec, last) {
    if (src == name && (name in lead)) printf "%s", lead[name]
    print "[" name "]"
    n = 0
    skipping = 0
    for (j = 1; j <= nlines[src]; j++) {
        line = body[src, j]
        if (skipping && line ~ /^[ \t]+[^ \t]/) continue
        skipping = 0
        k = key_of(line)
        if (k != "" && ((name, k) in ov || (src, k) in ov)) {
            v = ((name, k) in ov) ? ov[name, k] : ov[src, k]
            done[name, k] = 1
            skipping = 1
            if (v != "") out[++n] = k " = " v
            continue
        }
        out[++n] = line
    }
    while (n > 0 && out[n] ~ /^[ \t]*$/) n--
    # Keys the base section lacks go after its last key, above a closing
    # comment: SRC's overlay first, then NAME's.
    last = n
    while (last > 0 && (out[last] ~ /^;/ || out[last] ~ /^[ \t]*$/)) last--
    for (i = 1; i <= last; i++) print out[i]
    for (l = (src == name) ? 2 : 1; l <= 2; l++) {
        sec = (l == 1) ? src : name
        for (i = 1; i <= nkeys[sec]; i++) {
            k = okey[sec, i]
            if ((name, k) in done) continue
            done[name, k] = 1
            v = ((name, k) in ov) ? ov[name, k] : ov[src, k]
            if (v != "") print k " = " v
        }
    }
    for (i = last + 1; i <= n; i++) print out[i]
    print ""
}

# The overlay (first file).
FNR == NR {
    if ($0 ~ /^\[/) {
        sec = $0
        sub(/^\[/, "", sec); sub(/\].*$/, "", sec)
        if (index(sec, "<")) {
            from[trim(substr(sec, 1, index(sec, "<") - 1))] = trim(substr(sec, index(sec, "<") + 1))
            sec = trim(substr(sec, 1, index(sec, "<") - 1))
            added[++nadded] = sec
        } else {
            changed[trim(sec)] = 1
        }
        sec = trim(sec)
        next
    }
    if (sec == "") { head = head $0 "\n"; next }
    k = key_of($0)
    if (k == "") next
    ov[sec, k] = trim(substr($0, index($0, "=") + 1))
    okey[sec, ++nkeys[sec]] = k
    next
}

# The base (second file).
/^\[/ {
    bs = $0
    sub(/^\[/, "", bs); sub(/\].*$/, "", bs)
    bs = trim(bs)
    order[++nsec] = bs
    inbase[bs] = 1
    # The comment just above a header belongs to that section.
    if (nsec > 1) {
        p = order[nsec - 1]
        j = nlines[p]
        while (j > 0 && body[p, j] ~ /^;/) j--
        if (j < nlines[p] && (j == 0 || body[p, j] ~ /^[ \t]*$/)) {
            for (i = j + 1; i <= nlines[p]; i++) lead[bs] = lead[bs] body[p, i] "\n"
            nlines[p] = j
        }
    }
    next
}
nsec == 0 { next }   # BASE's opening comment: the overlay's replaces it
{ body[order[nsec], ++nlines[order[nsec]]] = $0 }

END {
    # A difference to a section the base lacks would vanish unseen.
    for (c in changed)
        if (!(c in inbase)) {
            print "ini-overlay: [" c "]: no such section in the base" > "/dev/stderr"
            exit 1
        }
    printf "%s", head
    for (s = 1; s <= nsec; s++) emit(order[s], order[s])
    for (a = 1; a <= nadded; a++) {
        if (!(from[added[a]] in inbase)) {
            print "ini-overlay: [" added[a] " < " from[added[a]] "]: no such section in the base" > "/dev/stderr"
            exit 1
        }
        emit(added[a], from[added[a]])
    }
}
