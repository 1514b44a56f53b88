// Encodes every record of a corpus (one JSON string per line) with npm's
// `tiktoken` (the WASM build of OpenAI's Rust tiktoken) and writes one line of
// space-separated ids per record; prints the encode loop's MB/s. A second,
// independent reference for tokenizer_reference_test (OpenAI's own BPE, not a
// port) and the speed anchor of bench/tokenizer_compare.
//
//   node tiktoken_encode.js NODE_MODULES gpt2 CORPUS OUT
//       tiktoken's own GPT-2 ranks (encoders/gpt2.json)
//   node tiktoken_encode.js NODE_MODULES hf TOKENIZER_JSON CORPUS OUT
//       ranks built from a byte-level BPE tokenizer.json (Llama 3 style, where
//       the vocabulary was converted from tiktoken ranks: id = rank), with the
//       Split pre-tokenizer's regex as tiktoken's pattern
//
// Encoding is ordinary (special tokens are text), as zerotrain's
// Tokenizer::encode and the tests' references encode a corpus.
'use strict';
const fs = require('fs');
const path = require('path');

// GPT-2's byte-level alphabet: the printable character that stands for each
// byte in a byte-level BPE vocabulary.
function byteLevelDecoder() {
  const bytes = [];
  for (let b = 33; b <= 126; ++b) bytes.push(b);
  for (let b = 161; b <= 172; ++b) bytes.push(b);
  for (let b = 174; b <= 255; ++b) bytes.push(b);
  const chars = bytes.slice();
  let n = 0;
  for (let b = 0; b < 256; ++b) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      chars.push(256 + n++);
    }
  }
  const decode = new Map();
  bytes.forEach((b, i) => decode.set(String.fromCodePoint(chars[i]), b));
  return decode;
}

function ranksFromTokenizerJson(file) {
  const t = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (t.model.type !== 'BPE') throw new Error(`${file}: model is ${t.model.type}, not BPE`);
  const pre = t.pre_tokenizer || {};
  const parts = pre.type === 'Sequence' ? pre.pretokenizers : [pre];
  const split = parts.find((p) => p.type === 'Split' && p.pattern && p.pattern.Regex);
  if (!split || !parts.some((p) => p.type === 'ByteLevel')) {
    throw new Error(`${file}: not a byte-level BPE with a Split regex (tiktoken has no other form)`);
  }
  const decode = byteLevelDecoder();
  const lines = [];
  for (const [token, id] of Object.entries(t.model.vocab)) {
    const bytes = Buffer.from([...token].map((c) => {
      const b = decode.get(c);
      if (b === undefined) throw new Error(`${file}: token ${token} is not byte-level`);
      return b;
    }));
    lines.push(`${bytes.toString('base64')} ${id}`);
  }
  return {ranks: lines.join('\n'), pattern: split.pattern.Regex};
}

const [modules, kind, ...rest] = process.argv.slice(2);
const {Tiktoken} = require(path.join(modules, 'tiktoken', 'lite', 'tiktoken.cjs'));
let encoder, corpus, out;
if (kind === 'gpt2') {
  [corpus, out] = rest;
  const gpt2 = require(path.join(modules, 'tiktoken', 'encoders', 'gpt2.json'));
  encoder = new Tiktoken(gpt2.bpe_ranks, gpt2.special_tokens, gpt2.pat_str);
} else if (kind === 'hf') {
  const [tokenizerJson] = rest;
  [corpus, out] = rest.slice(1);
  const {ranks, pattern} = ranksFromTokenizerJson(tokenizerJson);
  encoder = new Tiktoken(ranks, {}, pattern);
} else {
  console.error('usage: tiktoken_encode.js NODE_MODULES gpt2|hf ...');
  process.exit(2);
}
const texts = fs.readFileSync(corpus, 'utf8').split('\n').filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
const started = process.hrtime.bigint();
let bytes = 0;
const results = texts.map((text) => {
  bytes += Buffer.byteLength(text, 'utf8');
  return encoder.encode_ordinary(text);
});
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
encoder.free();
fs.writeFileSync(out, results.map((ids) => ids.join(' ')).join('\n') + '\n');
console.log(
    `encoded ${texts.length} records, ${bytes} bytes in ${seconds.toFixed(3)} s: ` +
    `${(bytes / seconds / 1e6).toFixed(2)} MB/s`);
