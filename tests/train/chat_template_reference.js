// Renders and encodes conversations with a tokenizer's own chat template
// (tokenizer_config.json's Jinja, run by transformers.js's Jinja through
// @lenml/tokenizers): the ids zerotrain's written-out chat formats must
// reproduce.
//
//   node chat_template_reference.js NODE_MODULES TOKENIZER_JSON CONFIG_JSON CONVERSATIONS_JSON
//        [--generation-prompt]
// prints one JSON array of ids per conversation (with the flag: rendered
// with add_generation_prompt, as generation's prompt).
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, tokenizerJson, configJson, conversations, flag] = process.argv.slice(2);
const addGenerationPrompt = flag === '--generation-prompt';
const {TokenizerLoader} = require(path.join(modules, '@lenml', 'tokenizers'));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(tokenizerJson, 'utf8')),
  tokenizerConfig: JSON.parse(fs.readFileSync(configJson, 'utf8')),
});
for (const messages of JSON.parse(fs.readFileSync(conversations, 'utf8'))) {
  const ids = tokenizer.apply_chat_template(
      messages, {tokenize: true, return_tensor: false, add_generation_prompt: addGenerationPrompt});
  console.log(JSON.stringify(Array.from(ids, Number)));
}
