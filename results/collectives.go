package results

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"strconv"

	"github.com/lockstep-sim/lockstep/hostsim"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/workloads"
)

// CollectivesHeader is the first line of collectives.csv.
const CollectivesHeader = "job,iteration,type,algorithm,bytes,ranks,start_ns,end_ns,cct_ns,ideal_cct_ns,algbw_GBps,busbw_GBps"

// JobsHeader is the first line of jobs.csv.
const JobsHeader = "job,iteration,begin_ns,end_ns,iteration_ns"

// CollectiveRow is one collective instance's outcome.
type CollectiveRow struct {
	Inst *scenario.CollectiveInstance
	// Start is when its first flow started, End when its last byte
	// arrived (Done: every flow finished).
	Start, End sim.Time
	Done       bool
	Ideal      sim.Time
	// TasksEnd is when the last of its iteration's compute tasks fired
	// (0 without tasks); TasksDone says every one of them did.
	TasksEnd  sim.Time
	TasksDone bool
}

// JobName is the job column of collectives.csv: the job's name, with
// ".tp" or ".pp" for a parallel job's tensor- and pipeline-parallel
// instances (its data-parallel all-reduces keep the job's name).
func (r *CollectiveRow) JobName() string {
	switch p := r.Inst.Phase; p {
	case workloads.PhaseTP, workloads.PhasePP:
		return r.Inst.Job + "." + p
	}
	return r.Inst.Job
}

// CCT is the collective completion time (0 unless Done).
func (r *CollectiveRow) CCT() sim.Time {
	if !r.Done {
		return 0
	}
	return r.End - r.Start
}

// AlgBW is NCCL's algorithm bandwidth, bytes / CCT, in GB/s (1e9 bytes/s).
func (r *CollectiveRow) AlgBW() float64 {
	c := r.CCT()
	if c <= 0 {
		return 0
	}
	return float64(r.Inst.Bytes) / c.Seconds() / 1e9
}

// BusBW is NCCL's bus bandwidth: AlgBW times the op's factor
// (workloads.BusFactor).
func (r *CollectiveRow) BusBW() float64 {
	return r.AlgBW() * workloads.BusFactor(r.Inst.Op, len(r.Inst.Hosts))
}

// Collectives computes every collective instance's row from the merged
// flow records.
func (o *Outputs) Collectives() []CollectiveRow {
	b := o.Built
	flows := b.Fabric.Flows
	rows := make([]CollectiveRow, len(b.Collectives))
	for k := range b.Collectives {
		in := &b.Collectives[k]
		row := CollectiveRow{Inst: in, Start: sim.Never, Done: true}
		for i := in.First; i < in.First+in.Count; i++ {
			r := &o.Records[i]
			if r.Started {
				row.Start = min(row.Start, FlowStart(&flows[i], r))
			}
			if !r.Finished {
				row.Done = false
				continue
			}
			row.End = max(row.End, r.Finish)
		}
		if row.Start == sim.Never {
			row.Start, row.Done = 0, false
		}
		row.Ideal = IdealCCT(b.Topo.Links[b.Topo.FirstLink(b.Topo.Hosts[in.Hosts[0]])].Rate, b.Fabric.Transport, flows, in, o.Ideal)
		row.TasksDone = true
		for t := in.Tasks.First; t < in.Tasks.First+in.Tasks.Count; t++ {
			if int(t) >= len(o.TaskFired) || o.TaskFired[t] == sim.Never {
				row.TasksDone = false
				continue
			}
			row.TasksEnd = max(row.TasksEnd, o.TaskFired[t])
		}
		rows[k] = row
	}
	return rows
}

// IdealCCT is a collective's completion time on an empty fabric: the
// longer of its critical path (every flow taking its ideal FCT, each
// dependency its delay) and the busiest NIC's time to send or receive
// the instance's bytes with their headers, and the ACKs it sends for what
// it receives, at rate (docs/decisions.md, "Ideal CCT"). With pipelining
// the NIC term dominates: for a ring all-reduce with an ACK per packet it
// is 2(n-1)/n x size x (MTU + ACK size) / MSS over the NIC rate.
func IdealCCT(rate sim.Bandwidth, cfg hostsim.Config, flows []hostsim.FlowSpec, in *scenario.CollectiveInstance, ideal []sim.Time) sim.Time {
	first, n := in.First, in.Count
	est := make([]sim.Time, n) // earliest start, relative to the collective's
	var path sim.Time
	tx, rx := map[int]int64{}, map[int]int64{}
	mss := cfg.MTU - cfg.Header
	for j := int32(0); j < n; j++ {
		f := &flows[first+j]
		var id sim.Time
		if int(first+j) < len(ideal) {
			id = ideal[first+j]
		}
		fin := est[j] + id
		path = max(path, fin)
		for _, list := range [2][]int32{f.OnRecvDone(), f.OnSendDone()} {
			for _, g := range list {
				if g >= first && g < first+n {
					est[g-first] = max(est[g-first], fin+flows[g].Delay)
				}
			}
		}
		wire, acks := f.Size, int64(0)
		if mss > 0 {
			pkts := (f.Size + mss - 1) / mss
			wire += pkts * cfg.Header
			acks = pkts
			if cfg.DelAck.Enabled && cfg.DelAck.Count > 1 {
				acks = (pkts + int64(cfg.DelAck.Count) - 1) / int64(cfg.DelAck.Count)
			}
			acks *= cfg.AckSize
		}
		// The receiver's NIC also sends the ACKs.
		tx[f.Src] += wire
		rx[f.Dst] += wire
		tx[f.Dst] += acks
		rx[f.Src] += acks
	}
	var nic int64
	for _, m := range []map[int]int64{tx, rx} {
		for _, v := range m { // max: the order does not matter
			nic = max(nic, v)
		}
	}
	return max(path, longTxTime(rate, nic))
}

// longTxTime is the time rate takes for n bytes, rounded up, without the
// overflow of sim.Bandwidth.TxTime above about 1 MB.
func longTxTime(rate sim.Bandwidth, n int64) sim.Time {
	if rate <= 0 || n <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(n)*8, uint64(sim.Second))
	if hi >= uint64(rate) {
		return sim.Never
	}
	q, r := bits.Div64(hi, lo, uint64(rate))
	if r > 0 {
		q++
	}
	return sim.Time(min(q, uint64(sim.Never)))
}

func fmtGB(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// WriteCollectives writes collectives.csv: one row per collective
// instance; end, cct and the bandwidths are empty when it did not finish.
func WriteCollectives(w io.Writer, rows []CollectiveRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, CollectivesHeader)
	for i := range rows {
		r := &rows[i]
		end, cct, alg, bus := "", "", "", ""
		if r.Done {
			end, cct, alg, bus = r.End.NsString(), r.CCT().NsString(), fmtGB(r.AlgBW()), fmtGB(r.BusBW())
		}
		fmt.Fprintf(bw, "%s,%d,%s,%s,%d,%d,%s,%s,%s,%s,%s,%s\n", r.JobName(), r.Inst.Iteration, r.Inst.Op, r.Inst.Algorithm,
			r.Inst.Bytes, len(r.Inst.Hosts), r.Start.NsString(), end, cct, r.Ideal.NsString(), alg, bus)
	}
	return bw.Flush()
}

// WriteJobs writes jobs.csv: every iteration of every job, from the end
// of the previous iteration (the job's start for the first) to the end of
// its collective (of a parallel job: the last of its instances and
// compute tasks); empty end and time when it did not finish. rows holds a
// job's instances iteration by iteration.
func WriteJobs(w io.Writer, rows []CollectiveRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, JobsHeader)
	var begin sim.Time
	ok := true
	for i := 0; i < len(rows); {
		r := &rows[i]
		if r.Inst.Iteration == 0 {
			begin, ok = r.Inst.Start, true
		}
		// The iteration's rows: its instances (one for a plain job).
		end, done := r.TasksEnd, r.TasksDone || r.Inst.Tasks.Count == 0
		j := i
		for ; j < len(rows) && rows[j].Inst.Job == r.Inst.Job && rows[j].Inst.Iteration == r.Inst.Iteration; j++ {
			end, done = max(end, rows[j].End), done && rows[j].Done
		}
		bs, es, it := "", "", ""
		if ok {
			bs = begin.NsString()
		}
		if ok && done {
			es, it = end.NsString(), (end - begin).NsString()
		}
		fmt.Fprintf(bw, "%s,%d,%s,%s,%s\n", r.Inst.Job, r.Inst.Iteration, bs, es, it)
		begin, ok = end, ok && done
		i = j
	}
	return bw.Flush()
}

// WriteCollectivesCSV writes collectives.csv of the run.
func (o *Outputs) WriteCollectivesCSV(w io.Writer) error { return WriteCollectives(w, o.Collectives()) }

// WriteJobsCSV writes jobs.csv of the run.
func (o *Outputs) WriteJobsCSV(w io.Writer) error { return WriteJobs(w, o.Collectives()) }
