// Encodes every record of a corpus (one JSON string per line) with a
// reference encoder from npm and writes one line of space-separated ids per
// record: the ids zerotrain's tokenizer must reproduce exactly.
//
//   node reference_encode.js NODE_MODULES gpt2 CORPUS OUT
//       gpt-3-encoder's Encoder.js (OpenAI's GPT-2 encoder ported to JS)
//   node reference_encode.js NODE_MODULES hf TOKENIZER_JSON CONFIG_JSON CORPUS OUT
//       @lenml/tokenizers (transformers.js's tokenizers) on that tokenizer.json,
//       without special tokens added
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, kind, ...rest] = process.argv.slice(2);
let encode;
let corpus, out;
if (kind === 'gpt2') {
  [corpus, out] = rest;
  const gpt2 = require(path.join(modules, 'gpt-3-encoder'));
  encode = (text) => gpt2.encode(text);
} else if (kind === 'hf') {
  const [tokenizerJson, configJson] = rest;
  [corpus, out] = rest.slice(2);
  const {TokenizerLoader} = require(path.join(modules, '@lenml', 'tokenizers'));
  const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(tokenizerJson, 'utf8')),
    tokenizerConfig: JSON.parse(fs.readFileSync(configJson, 'utf8')),
  });
  encode = (text) => tokenizer.encode(text, {add_special_tokens: false});
} else {
  console.error('usage: reference_encode.js NODE_MODULES gpt2|hf ...');
  process.exit(2);
}
const lines = fs.readFileSync(corpus, 'utf8').split('\n').filter((l) => l.length > 0);
const started = process.hrtime.bigint();
let bytes = 0;
const results = lines.map((l) => {
  const text = JSON.parse(l);
  bytes += Buffer.byteLength(text, 'utf8');
  return encode(text).join(' ');
});
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
fs.writeFileSync(out, results.join('\n') + '\n');
console.log(
    `encoded ${lines.length} records, ${bytes} bytes in ${seconds.toFixed(3)} s: ` +
    `${(bytes / seconds / 1e6).toFixed(2)} MB/s`);
