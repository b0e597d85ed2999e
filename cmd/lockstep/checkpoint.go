package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/internal/checkpoint"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/runner"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// Files of a checkpoint directory besides the ckpt-* checkpoints: how the
// run was started (runInfoName) and the effective scenario and placement
// (setupName, a wire.Setup as a coordinator hands it to nodes).
const (
	runInfoName = "run.json"
	setupName   = "setup.bin"
	stateName   = "state.ckpt" // a checkpoint of every partition of a run in this process
)

// Run modes a checkpoint directory records.
const (
	modeOne    = "one"    // one partition in this process
	modeMemory = "memory" // in-memory partitions (the default cut, or --transport memory)
	modeNATS   = "nats"   // partitions over NATS (goroutine nodes, --procs, --external)
)

// runInfo is run.json: what `lockstep resume` needs besides the setup.
type runInfo struct {
	Format int `json:"format"`
	// Args are the run command's arguments (the scenario file and every
	// flag given); resume runs them again with the scenario and placement
	// of the setup, from the last checkpoint.
	Args []string `json:"args"`
	Out  string   `json:"out"`
	Mode string   `json:"mode"`
	// Cut is the default cut's record (perf.cut), Explicit says the
	// in-memory partitions were asked for (--transport memory).
	Cut      *partition.DefaultCut `json:"cut,omitempty"`
	Explicit bool                  `json:"explicit,omitempty"`
}

// addCheckpointFlags adds the checkpoint flags to `lockstep run`.
func addCheckpointFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Duration("checkpoint-every", 0, "checkpoint the run every this long of virtual time, e.g. 100us (at the first window boundary after each multiple; over NATS every node stores its part and the raft leader commits the checkpoint); resume with 'lockstep resume'")
	f.Duration("checkpoint-wall", 0, "also checkpoint whenever this much wall-clock time has passed since the last one, e.g. 10m (runs in this process only)")
	f.String("checkpoint-dir", "", "directory of the checkpoints (default: OUT/checkpoints)")
	f.Int("checkpoint-keep", 2, "checkpoints kept (the older ones are removed once a newer one is written)")
	f.Int("max-restarts", 3, "with --procs and checkpoints: how many times a lost node (its process exited, or it went silent for --peer-timeout) is replaced and every node rolled back to the last committed checkpoint before the run fails (0: a lost node fails the run)")
}

// ckptRun writes a run's checkpoints.
type ckptRun struct {
	w      *checkpoint.Writer
	every  sim.Time
	wall   time.Duration
	last   time.Time
	digest string
	parts  int
	seq    uint64 // the last checkpoint's
	// dist is what a run over NATS reports (its nodes write the
	// checkpoints; nil otherwise).
	dist *distCkpt
	// waited is what waiting for the last checkpoint's write returned.
	waited error
}

// distCkpt is perf.checkpoints of a run over NATS.
type distCkpt struct {
	written  int
	bytes    uint64
	seconds  float64 // the slowest node's, summed over its checkpoints
	restarts []wire.Restart
	perNode  []ckptNode
}

// ckptNode is one node's part in perf.checkpoints.per_node.
type ckptNode struct {
	Partition   int     `json:"partition"`
	Checkpoints uint64  `json:"checkpoints"`
	Bytes       uint64  `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	Restores    uint64  `json:"restores"`
	Stale       uint64  `json:"stale_messages"`
}

// checkpointing reads the checkpoint flags; nil when none asks for
// checkpoints.
func checkpointing(cmd *cobra.Command, out string) (*ckptRun, error) {
	every, _ := cmd.Flags().GetDuration("checkpoint-every")
	wall, _ := cmd.Flags().GetDuration("checkpoint-wall")
	dir, _ := cmd.Flags().GetString("checkpoint-dir")
	keep, _ := cmd.Flags().GetInt("checkpoint-keep")
	switch {
	case every < 0 || wall < 0:
		return nil, badInput(fmt.Errorf("--checkpoint-every and --checkpoint-wall must not be negative"))
	case keep < 1:
		return nil, badInput(fmt.Errorf("--checkpoint-keep %d: keep at least 1", keep))
	case every == 0 && wall == 0:
		if cmd.Flags().Changed("checkpoint-dir") || cmd.Flags().Changed("checkpoint-keep") {
			return nil, badInput(fmt.Errorf("--checkpoint-dir and --checkpoint-keep need --checkpoint-every or --checkpoint-wall"))
		}
		return nil, nil
	}
	if dir == "" {
		dir = filepath.Join(out, "checkpoints")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, badInput(fmt.Errorf("--checkpoint-dir: %v", err))
	}
	// Durations on the command line are real-time units read as virtual
	// time: 100us means one hundred virtual microseconds.
	return &ckptRun{w: checkpoint.NewWriter(dir, keep), every: sim.Time(every.Nanoseconds()) * sim.Nanosecond, wall: wall,
		last: time.Now()}, nil
}

// start records how the run goes in the checkpoint directory: run.json
// and the setup. A resumed run keeps them.
func (c *ckptRun) start(cmd *cobra.Command, b *scenario.Built, pl *partition.Placement, out string, ri runInfo) error {
	c.digest, c.parts = b.Digest(), pl.P
	if resumeOf(cmd) != nil {
		return nil
	}
	dir := c.w.Store.Dir
	var err error
	if err = os.MkdirAll(dir, 0o755); err != nil {
		return badInput(fmt.Errorf("--checkpoint-dir %s: %v", dir, unwrapPathErr(err)))
	}
	ri.Format = checkpoint.Format
	if ri.Out, err = filepath.Abs(out); err != nil {
		return badInput(fmt.Errorf("--out %s: %v", out, err))
	}
	ri.Args = commandArgs(cmd, dir)
	data, err := json.MarshalIndent(&ri, "", " ")
	if err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, runInfoName), func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	}); err != nil {
		return err
	}
	return deploy.WriteSetup(filepath.Join(dir, setupName), deploy.NewSetup(b, pl))
}

// commandArgs are cmd's positional arguments and every flag given, with
// the checkpoint directory dir (absolute).
func commandArgs(cmd *cobra.Command, dir string) []string {
	args := append([]string{}, cmd.Flags().Args()...)
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "out", "checkpoint-dir":
			// run.json has the output directory resolved (also from
			// $LOCKSTEP_OUT); the checkpoints' goes in absolute.
		default:
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	return append(args, "--checkpoint-dir="+dir)
}

// ckptPerf is summary.json's perf.checkpoints.
type ckptPerf struct {
	Written       int     `json:"written"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	EncodeSeconds float64 `json:"encode_seconds"`
	// WriteSeconds is the time spent compressing, writing and syncing
	// the files in the background, while the run went on.
	WriteSeconds float64 `json:"write_seconds,omitempty"`
	Dir          string  `json:"dir,omitempty"`
	// ResumedFrom is the checkpoint a resumed run started from.
	ResumedFrom *ckptFrom `json:"resumed_from,omitempty"`
	// Restarts counts the lost nodes a run over NATS replaced, each
	// rolling every node back to a checkpoint: Restarted says which
	// partition, the window reached and the checkpoint's window.
	Restarts  int            `json:"restarts"`
	Restarted []wire.Restart `json:"restarted,omitempty"`
	// PerNode, in a run over NATS, is each node's share: the parts it
	// stored (bytes, seconds encoding and storing them), the checkpoints
	// it restored, and the messages it dropped as of another epoch (the
	// last process of each partition only).
	PerNode []ckptNode `json:"per_node,omitempty"`
}

type ckptFrom struct {
	Dir    string `json:"dir"`
	Window uint64 `json:"window"`
	TimePS int64  `json:"time_ps"`
}

// perf returns perf.checkpoints' maker (nil when the run neither
// checkpoints nor resumed).
func (c *ckptRun) perf(cmd *cobra.Command) func() any {
	rs := resumeOf(cmd)
	if c == nil && rs == nil {
		return nil
	}
	return func() any {
		p := &ckptPerf{}
		if c != nil {
			c.waited = c.w.Wait() // the last checkpoint's background write
			p.Written, p.Bytes, p.Seconds, p.EncodeSeconds, p.Dir = c.w.Count, c.w.Bytes, c.w.Seconds, c.w.EncodeSeconds, c.w.Store.Dir
			p.WriteSeconds = c.w.WriteSeconds
		}
		if c != nil && c.dist != nil {
			d := c.dist
			p.Written, p.Bytes, p.Seconds, p.EncodeSeconds = d.written, int64(d.bytes), d.seconds, 0
			p.Restarts, p.Restarted, p.PerNode = len(d.restarts), d.restarts, d.perNode
		}
		if rs != nil {
			m := rs.loaded.Manifest
			p.ResumedFrom = &ckptFrom{Dir: rs.loaded.Dir, Window: m.Window, TimePS: m.TimePS}
		}
		return p
	}
}

// finish waits for the last checkpoint to be written (if perf has not)
// and fails the run if it could not be.
func (c *ckptRun) finish() error {
	if c == nil {
		return nil
	}
	if err := c.w.Wait(); err != nil {
		return failedRun(err)
	}
	return failedRun(c.waited)
}

// due says a wall-clock checkpoint is due.
func (c *ckptRun) due() bool { return c.wall > 0 && time.Since(c.last) >= c.wall }

// saveOne checkpoints a run in one partition.
func (c *ckptRun) saveOne(st *runner.State) error {
	c.seq++
	err := c.w.Save(checkpoint.Of{Seq: c.seq, Time: int64(st.Time), Digest: c.digest, Partitions: 1},
		checkpoint.State{Name: stateName, Partition: -1, Roots: st.Roots(), Anchors: st.Anchors()})
	c.last = time.Now()
	return failedRun(err)
}

// saveLocal checkpoints an in-memory partitioned run.
func (c *ckptRun) saveLocal(st *node.LocalState) error {
	c.seq = st.Window
	err := c.w.Save(checkpoint.Of{Seq: c.seq, Window: st.Window, Time: int64(st.Time), Digest: c.digest, Partitions: c.parts},
		checkpoint.State{Name: stateName, Partition: -1, Roots: st.Roots(), Anchors: st.Anchors()})
	c.last = time.Now()
	return failedRun(err)
}

// runnerOptions sets opt to checkpoint with c and, when resuming, to
// restore from the checkpoint.
func (c *ckptRun) runnerOptions(cmd *cobra.Command, opt *runner.Options) {
	if c != nil {
		opt.Checkpoint, opt.CheckpointEvery, opt.CheckpointDue = c.saveOne, c.every, c.due
	}
	if rs := resumeOf(cmd); rs != nil {
		opt.Restore = func(st *runner.State) error {
			h, err := rs.restore(st.Roots(), st.Anchors())
			if err != nil {
				return err
			}
			st.Time = sim.Time(h.Time)
			if c != nil {
				c.seq = rs.loaded.Manifest.Seq
			}
			return nil
		}
	}
}

// localOptions is runnerOptions for an in-memory partitioned run.
func (c *ckptRun) localOptions(cmd *cobra.Command, opt *node.LocalOptions) {
	if c != nil {
		opt.Checkpoint, opt.CheckpointEvery, opt.CheckpointDue = c.saveLocal, c.every, c.due
	}
	if rs := resumeOf(cmd); rs != nil {
		opt.Restore = func(st *node.LocalState) error {
			h, err := rs.restore(st.Roots(), st.Anchors())
			if err != nil {
				return err
			}
			st.Window, st.Time = h.Window, sim.Time(h.Time)
			return nil
		}
	}
}

// resumeState is what `lockstep resume` hands the run command it runs
// again (through the command's context).
type resumeState struct {
	info   runInfo
	b      *scenario.Built
	pl     *partition.Placement
	loaded *checkpoint.Loaded
}

type resumeKey struct{}

func resumeOf(cmd *cobra.Command) *resumeState {
	if cmd.Context() == nil {
		return nil
	}
	rs, _ := cmd.Context().Value(resumeKey{}).(*resumeState)
	return rs
}

// restore decodes the checkpoint's state file into a fresh build's roots.
func (rs *resumeState) restore(roots, anchors []any) (*checkpoint.Header, error) {
	name := filepath.Join(rs.loaded.Dir, stateName)
	var data []byte
	for i, p := range rs.loaded.Manifest.Files {
		if p.Name == stateName {
			data = rs.loaded.Files[i]
		}
	}
	if data == nil {
		return nil, badInput(fmt.Errorf("%s: the checkpoint has no %s", rs.loaded.Dir, stateName))
	}
	h, err := checkpoint.Restore(name, data, rs.b.Digest(), -1, roots, anchors, nil)
	if err != nil {
		return nil, badInput(err)
	}
	return h, nil
}

// resumeCut is the cut the resumed run had.
func (rs *resumeState) cut() *autoCut {
	switch rs.info.Mode {
	case modeOne:
		return &autoCut{info: rs.info.Cut}
	case modeNATS:
		return nil // distributed as the recorded flags say, with the setup's placement
	}
	return &autoCut{pl: rs.pl, info: rs.info.Cut, explicit: rs.info.Explicit}
}

func newResumeCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume DIR",
		Short: "Continue a run from its last checkpoint (lockstep run --checkpoint-every)",
		Long: `Continue a run from the newest checkpoint in DIR that passes every check,
with the scenario, seed and placement the run had, and write the outputs it
would have written: byte-identical to a run that never stopped (summary.json's
perf fields aside). DIR is the checkpoint directory (--checkpoint-dir) or the
run's --out (whose checkpoints/ it then reads). A checkpoint that is
truncated or corrupted is refused, with one line on stderr naming the file,
and the one before it is used; with none usable, resume exits 2. The run
goes on checkpointing as it was asked to. A run over NATS (--partitions P,
--procs, --coordinators 3) resumes the same way, with new processes: every
node restores its part of the checkpoint (its launcher died; a lost node
alone needs no resume, the run replaces it by itself).`,
		Example: "  lockstep run examples/dcqcn.yaml --out out/d --checkpoint-every 100us\n  lockstep resume out/d\n" +
			"  lockstep run s.yaml --out out/p --partitions 4 --procs --coordinators 3 --checkpoint-every 100us\n  lockstep resume out/p",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResume(cmd, args[0], stdout, stderr)
		},
	}
	cmd.Flags().String("out", "", "write the outputs here (default: the run's --out)")
	return cmd
}

func runResume(cmd *cobra.Command, dir string, stdout, stderr io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, runInfoName)); err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, "checkpoints", runInfoName)); err2 == nil {
			dir = filepath.Join(dir, "checkpoints")
		} else {
			return badInput(fmt.Errorf("%s: not a checkpoint directory (no %s): %v", dir, runInfoName, unwrapPathErr(err)))
		}
	}
	rs := &resumeState{}
	ri := filepath.Join(dir, runInfoName)
	data, err := os.ReadFile(ri)
	if err != nil {
		return badInput(fmt.Errorf("%s: %v", ri, unwrapPathErr(err)))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs.info); err != nil {
		return badInput(fmt.Errorf("%s: %v", ri, err))
	}
	if rs.info.Format != checkpoint.Format || len(rs.info.Args) == 0 || (rs.info.Mode != modeOne && rs.info.Mode != modeMemory && rs.info.Mode != modeNATS) {
		return badInput(fmt.Errorf("%s: format %d, mode %q: not a run this build resumes", ri, rs.info.Format, rs.info.Mode))
	}
	su, err := deploy.ReadSetup(filepath.Join(dir, setupName))
	if err != nil {
		return badInput(err)
	}
	if rs.b, rs.pl, err = node.FromSetup(su); err != nil {
		return badInput(fmt.Errorf("%s: %w", filepath.Join(dir, setupName), err))
	}
	store := checkpoint.Store{Dir: dir}
	l, refused, err := store.Latest()
	for _, r := range refused {
		fmt.Fprintf(stderr, "lockstep: refused: %s\n", oneLine(r))
	}
	if err != nil {
		return badInput(err)
	}
	if l.Manifest.Digest != rs.b.Digest() {
		return badInput(fmt.Errorf("%s: a checkpoint of scenario %s, the setup is of %s", l.Dir, l.Manifest.Digest, rs.b.Digest()))
	}
	if rs.info.Mode == modeNATS {
		// One part per partition, as the nodes stored them.
		ok := l.Manifest.Partitions == rs.pl.P && len(l.Manifest.Files) == rs.pl.P
		for i := 0; ok && i < rs.pl.P; i++ {
			ok = l.Manifest.Files[i].Name == node.PartName(i)
		}
		if !ok {
			return badInput(fmt.Errorf("%s: not a checkpoint of the run's %d partitions", filepath.Join(l.Dir, checkpoint.ManifestName), rs.pl.P))
		}
		// The checkpoints after it (refused, or never committed) are of
		// windows the nodes checkpoint again: their stale parts and
		// manifests must not mix with the new ones.
		gone, err := store.RemoveNewer(l.Manifest.Seq)
		for _, d := range gone {
			fmt.Fprintf(stderr, "lockstep: removed %s (after the checkpoint resumed from)\n", d)
		}
		if err != nil {
			return failedRun(err)
		}
	}
	rs.loaded = l
	out := rs.info.Out
	if o, _ := cmd.Flags().GetString("out"); o != "" {
		out = o
	}
	fmt.Fprintf(stderr, "lockstep: resuming %s from %s (virtual %s)\n", rs.b.File, l.Dir, sim.Time(l.Manifest.TimePS))
	v := newViper()
	root := newRoot(v, stdout, stderr)
	root.SetArgs(append(append([]string{"run"}, rs.info.Args...), "--out", out))
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	err = root.ExecuteContext(context.WithValue(ctx, resumeKey{}, rs))
	var u usageError
	if err != nil && isCobraUsage(err) && !errors.As(err, &u) {
		return badInput(fmt.Errorf("%s: args %s: %w", ri, strings.Join(rs.info.Args, " "), err))
	}
	return err
}

// runFailedError marks an error that fails a run (exit status 3) where
// errors would otherwise count as internal: a checkpoint that could not
// be written.
type runFailedError struct{ err error }

func (e runFailedError) Error() string { return e.err.Error() }
func (e runFailedError) Unwrap() error { return e.err }

func failedRun(err error) error {
	if err == nil {
		return nil
	}
	return runFailedError{err}
}

// newViper is the configuration every command reads: flags, then
// LOCKSTEP_* environment variables.
func newViper() *viper.Viper {
	v := viper.New()
	v.SetEnvPrefix("LOCKSTEP")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	return v
}

// deployOptions sets a run over NATS to checkpoint with c (its nodes
// store their parts in c's directory; with --external, only in one given
// with --checkpoint-dir, else in the server's JetStream object store) and,
// when resuming, to start from the checkpoint.
func (c *ckptRun) deployOptions(cmd *cobra.Command, o *deploy.Options, external bool, maxRestarts int) {
	o.MaxRestarts = maxRestarts
	if c != nil {
		o.CheckpointEvery, o.CheckpointKeep = c.every, c.w.Store.Keep
		if !external || cmd.Flags().Changed("checkpoint-dir") {
			o.CheckpointDir = c.w.Store.Dir
		}
	}
	if rs := resumeOf(cmd); rs != nil {
		o.Resume = node.RefOf(&rs.loaded.Manifest)
		if o.CheckpointDir == "" {
			// The parts are where the checkpoint was found.
			o.CheckpointDir = filepath.Dir(rs.loaded.Dir)
		}
	}
}

// distResult records what a run over NATS said of its checkpoints.
func (c *ckptRun) distResult(res *deploy.Result) {
	if c == nil || res == nil {
		return
	}
	d := &distCkpt{written: res.Checkpoints, restarts: res.Restarts}
	for _, r := range res.Results {
		if r != nil {
			d.bytes += r.Perf.CheckpointBytes
			d.seconds = max(d.seconds, r.Perf.CheckpointSeconds)
			d.perNode = append(d.perNode, ckptNode{Partition: r.Part.Partition, Checkpoints: r.Perf.Checkpoints,
				Bytes: r.Perf.CheckpointBytes, Seconds: r.Perf.CheckpointSeconds, Restores: r.Perf.Restores, Stale: r.Perf.Stale})
		}
	}
	c.dist = d
}
