// Writes the tokenizer tests' corpus: COUNT records of multilingual text
// (one JSON string per line), heavy in non-ASCII, from a seeded generator,
// so every run and every reference encoder sees the same text.
//
//   node make_corpus.js OUT.jsonl [COUNT] [SEED]
//
// The last tenth of the records are multi-line blocks (newlines, \r\n,
// tabs and runs of spaces between lines), the rest single lines.
// U+0085 and U+FEFF never appear: JavaScript's \s and Oniguruma's (Hugging
// Face's) disagree on them, so the JavaScript references cannot arbitrate.
'use strict';
const fs = require('fs');

const [out, countArg, seedArg] = process.argv.slice(2);
const count = Number(countArg || 10000);
let state = BigInt(seedArg || 20261205) & 0xffffffffffffffffn;

// splitmix64: small, seeded, identical everywhere.
function next() {
  state = (state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
  return Number((z ^ (z >> 31n)) >> 11n) / 2 ** 53;
}
const pick = (a) => a[Math.floor(next() * a.length)];
const between = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
const fromRange = (lo, hi, n) => {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCodePoint(between(lo, hi));
  return s;
};

const english =
    ('the of and to in is was that for on with as by at from his her they we you ' +
     'language model training tokenizer gradient optimizer checkpoint memory device shard ' +
     'Hello World DeepSpeed PyTorch ZeRO Llama Mistral Qwen GPT')
        .split(' ');
const contractions = [
  'don\'t', 'it\'s', 'we\'ll', 'they\'re', 'I\'m', 'you\'ve', 'she\'d', 'IT\'S', 'WE\'LL',
  'They\'Re', 'o\'clock', 'rock\'n\'roll', '\'s', '\'t', '\'quoted\''
];
const punctuation = [
  '.',  ',', '!', '?', '...', '--', '—', '“',  '”', '«', '»',  '(', ')', '[]', '{}', '<>',
  '#',  '@', '$', '%', '^&*', ';',  ':', '\'', '"', '/', '\\', '|', '~', '`',  '+=', '->',
  '::', '¿', '¡', '…', '·',   '•',  '§', '¶',  '©', '®', '™',  '°', '±', '×',  '÷'
];
const scripts = [
  () => fromRange(0x4e00, 0x9fa5, between(1, 12)),  // CJK ideographs
  () => fromRange(0x3041, 0x3096, between(2, 8)),   // hiragana
  () => fromRange(0x30a1, 0x30fa, between(2, 8)),   // katakana
  () => fromRange(0xac00, 0xd7a3, between(1, 6)),   // Hangul syllables
  () => fromRange(0x0430, 0x044f, between(2, 10)),  // Cyrillic lower
  () => fromRange(0x0410, 0x042f, 1) + fromRange(0x0430, 0x044f, between(1, 9)),
  () => fromRange(0x03b1, 0x03c9, between(2, 9)),  // Greek
  () => fromRange(0x0621, 0x064a, between(2, 8)),  // Arabic letters
  () => fromRange(0x05d0, 0x05ea, between(2, 7)),  // Hebrew
  () => fromRange(0x0905, 0x0939, 1) + fromRange(0x093e, 0x094c, 1) +
      fromRange(0x0915, 0x0939, between(1, 4)),    // Devanagari with vowel signs
  () => fromRange(0x0e01, 0x0e2e, between(2, 9)),  // Thai
  () => fromRange(0x00c0, 0x00d6, 1) + fromRange(0x00e0, 0x00f6, between(1, 6)),
  () => fromRange(0x0100, 0x017f, between(1, 6)),  // Latin Extended-A
  () => 'e\u0301' + fromRange(0x0061, 0x007a, 2) + fromRange(0x0300, 0x036f, 1),  // combining
  () => fromRange(0x1f600, 0x1f64f, between(1, 3)),                               // emoji (astral)
  () => fromRange(0x1f300, 0x1f5ff, 1) + '\u200d' + fromRange(0x1f300, 0x1f5ff, 1),
  () => fromRange(0x2200, 0x22ff, between(1, 4)),  // math operators
  () => fromRange(0xff01, 0xff5e, between(1, 6)),  // fullwidth forms
  () => fromRange(0x0660, 0x0669, between(1, 5)),  // Arabic-Indic digits
  () => fromRange(0x0966, 0x096f, between(1, 5)),  // Devanagari digits
  () => pick(['²', '³', '¹', '½', '¾', 'Ⅻ', 'ⅷ', '①', '⑳']),
];
const numbers = [
  () => String(between(0, 9)),
  () => String(between(10, 9999999)),
  () => between(0, 999) + '.' + between(0, 99),
  () => '1,' + between(100, 999) + ',000',
  () => '0x' + between(0, 65535).toString(16),
  () => between(1900, 2030) + '-0' + between(1, 9),
];
const spaces =
    [' ', ' ', ' ', ' ', ' ', ' ', '  ', '   ', '\t', ' \t', '\u00a0', '\u3000', '\u2009', ''];

function word() {
  const r = next();
  if (r < 0.22) return pick(english);
  if (r < 0.30) return pick(contractions);
  if (r < 0.40) return pick(punctuation);
  if (r < 0.48) return pick(numbers)();
  if (r < 0.50) return pick(english) + pick(punctuation) + pick(english);
  return pick(scripts)();
}
function line() {
  let s = next() < 0.1 ? pick(spaces) : '';
  const n = between(1, 16);
  for (let i = 0; i < n; i++) s += (i ? pick(spaces) : '') + word();
  if (next() < 0.08) s += pick(spaces);
  return s;
}
function block() {
  const breaks = ['\n', '\n', '\n\n', '\r\n', '\n\t', ' \n', '\n   ', '\n\n\n'];
  let s = line();
  const n = between(2, 8);
  for (let i = 0; i < n; i++) s += pick(breaks) + line();
  return s;
}

const records = [];
for (let i = 0; i < count; i++) records.push(JSON.stringify(i < count * 0.9 ? line() : block()));
fs.writeFileSync(out, records.join('\n') + '\n');
