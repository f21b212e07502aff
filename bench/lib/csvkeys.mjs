// The keys of `zipbench run --url TEMPLATE --csv FILE --key COLUMN`: the
// values of one column of a CSV (RFC 4180: quoted fields, "" inside
// quotes, CRLF or LF; its first line names the columns), each once, in
// the file's order, written one a line for loadgen --keys.
import fs from 'node:fs';

// The records of CSV text, each an array of fields, with the line each
// starts on.
export function* csvRecords(text) {
  let i = 0, line = 1;
  if (text.charCodeAt(0) === 0xfeff) i = 1;   // a byte-order mark
  while (i < text.length) {
    const start = line, fields = [];
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          if (i >= text.length) throw new Error(`line ${start}: a quoted field is not closed`);
          if (text[i] === '"') {
            if (text[i + 1] === '"') { field += '"'; i += 2; continue; }
            i++;
            break;
          }
          if (text[i] === '\n') line++;
          field += text[i++];
        }
      } else {
        while (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') field += text[i++];
      }
      fields.push(field);
      if (text[i] === ',') { i++; continue; }
      if (text[i] === '\r') i++;
      if (text[i] === '\n') { i++; line++; }
      break;
    }
    if (!(fields.length === 1 && fields[0] === '')) yield { fields, line: start };
  }
}

// COLUMN's values of FILE into OUT, one a line, each once; their count.
// A missing column, an empty file or a key with a line break in it is an
// Error naming the file (and the line).
export function writeColumnKeys(file, column, out) {
  const records = csvRecords(fs.readFileSync(file, 'utf8'));
  const head = records.next();
  if (head.done) throw new Error(`${file}: empty: its first line should name the columns`);
  const at = head.value.fields.indexOf(column);
  if (at < 0) throw new Error(`${file}:1: no column '${column}' (the columns: ${head.value.fields.join(', ')})`);
  const keys = new Set();
  for (const { fields, line } of records) {
    const k = fields[at];
    if (k === undefined || k === '') throw new Error(`${file}:${line}: no value in column '${column}'`);
    if (/[\r\n]/.test(k)) throw new Error(`${file}:${line}: the key of column '${column}' holds a line break`);
    keys.add(k);
  }
  if (!keys.size) throw new Error(`${file}: no rows under its header`);
  fs.writeFileSync(out, [...keys].join('\n') + '\n');
  return keys.size;
}
