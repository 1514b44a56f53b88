// Reads a TensorBoard event file with readers zerotrain did not write, and
// prints one JSON line per record:
//   node read_tfevents.js FILE
//   {"wall_time":..,"step":..,"file_version":".."} or {.., "tag":"..","value":..}
// Framing and both CRC32Cs: npm's `tfrecord` (its RecordReader throws on a
// bad length or data CRC). Records: npm's `protobufjs`, with TensorBoard's
// own schema for Event and Summary (tensorboard/compat/proto/event.proto and
// summary.proto, field numbers as there; messages zerotrain never writes are
// kept as bytes). Exit 1 with the error on stderr when either refuses.
'use strict';
const protobuf = require('protobufjs');
const { RecordReader } = require('tfrecord');

const root = protobuf.parse(`
syntax = "proto3";
package tensorboard;
message SourceMetadata { string writer = 1; }
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what {
    string file_version = 3;
    bytes graph_def = 4;
    Summary summary = 5;
    bytes log_message = 6;
    bytes session_log = 7;
    bytes tagged_run_metadata = 8;
    bytes meta_graph_def = 9;
  }
  SourceMetadata source_metadata = 10;
}
message SummaryMetadata {
  message PluginData { string plugin_name = 1; bytes content = 2; }
  PluginData plugin_data = 1;
  string display_name = 2;
  string summary_description = 3;
  int32 data_class = 4;
}
message Summary {
  message Value {
    string node_name = 7;
    string tag = 1;
    SummaryMetadata metadata = 9;
    oneof value {
      float simple_value = 2;
      bytes obsolete_old_style_histogram = 3;
      bytes image = 4;
      bytes histo = 5;
      bytes audio = 6;
      bytes tensor = 8;
    }
  }
  repeated Value value = 1;
}
`, { keepCase: true }).root;
const Event = root.lookupType('tensorboard.Event');

(async () => {
  const reader = await RecordReader.create(process.argv[2]);
  for (let rec; (rec = await reader.readRecord()) !== null;) {
    const e = Event.toObject(Event.decode(rec), { longs: String, oneofs: true });
    const base = { wall_time: e.wall_time || 0, step: String(e.step || 0) };
    if (e.what === 'file_version') {
      console.log(JSON.stringify({ ...base, file_version: e.file_version }));
    } else if (e.what === 'summary') {
      for (const v of e.summary.value || [])
        console.log(JSON.stringify({ ...base, tag: v.tag,
          value: Number.isFinite(v.simple_value) ? v.simple_value : String(v.simple_value) }));
    } else {
      console.log(JSON.stringify({ ...base, what: e.what || null }));
    }
  }
})().catch((err) => {
  console.error(String(err && err.message ? err.message : err));
  process.exit(1);
});
