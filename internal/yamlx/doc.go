// Package yamlx is a strict YAML-to-struct decoder for scenario files. It
// exists so that a researcher who mistypes a key, a unit or a number gets one
// precise line instead of a silently ignored field:
//
//	examples/x.yaml:12:5: topology.dumbbell.bandwith: unknown field (known: senders, receivers, host, bottleneck)
//	x.yaml:3:8: workload[2].size: expected a size like 64KB or 1MiB, got "lots"
//
// Decode parses with gopkg.in/yaml.v3 into a yaml.Node tree and walks it with
// reflection. Compared with yaml.v3's own Unmarshal it:
//
//   - rejects unknown keys, duplicate keys and values of the wrong type
//     (including integer overflow, and YAML 1.1 booleans such as "yes");
//   - enforces `lockstep:"required"` fields;
//   - stops at the first error and reports it as *Error, whose Error() is
//     always a single line "FILE:LINE:COL: path: message";
//   - reports the line of a YAML syntax error itself, rather than the
//     often unrelated line that yaml.v3 prints.
//
// Only fields with a `yaml:"name"` tag are decoded; `yaml:"-"` and untagged
// fields are skipped, and `yaml:",inline"` embeds a struct (or collects the
// remaining keys in a map[string]T). Anchors, aliases and merge keys (<<) are
// supported, with a bound on alias expansion.
//
// The unit types Size, Rate, Duration and Probability parse the spellings
// researchers write ("64KiB", "100Gbps", "2.5us", "5%") exactly, in integers
// where the simulator uses integers: a value that is not a whole number of
// bytes, bits per second or picoseconds is an error, never rounded.
//
// What it does not do: it never reads files (the caller passes the bytes and
// the name to report), it decodes a single YAML document, it does not order
// map keys (a caller that iterates over a decoded map must sort the keys), and
// it does not validate semantics across fields; that is each Config's
// Validate.
package yamlx
