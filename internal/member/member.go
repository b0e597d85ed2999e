// Package member holds the per-run credentials of a distributed run's
// members (DESIGN.md §10: only the members of a run speak on its
// subjects). The launcher makes one ed25519 key pair (a NATS user nkey)
// per member: itself, each coordinator replica and each node. A member's
// Creds hold its own seed and every member's public key; they reach a
// child process through a file named by the LOCKSTEP_CREDENTIALS
// environment variable, never through argv.
//
// The key does two jobs. On the embedded NATS server it is the member's
// login, and the server lets each member publish only on its own subjects
// (deploy's permissions), so every per-window message is attributed by its
// subject at no per-window cost. And it signs the rare messages whose
// origin must hold on any server: the setup (by the launcher, so a node's
// digest check proves the scenario came from the launcher), result chunks
// (by their node) and aborts.
package member

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/lockstep-sim/lockstep/internal/wire"
)

// Env names the environment variable that holds a child's credentials
// file.
const Env = "LOCKSTEP_CREDENTIALS"

// Launcher is the launcher's member name; Node and Coordinator give the
// others'.
const Launcher = "launcher"

// Node is node i's member name.
func Node(i int) string { return fmt.Sprintf("node-%d", i) }

// Coordinator is coordinator replica id's member name.
func Coordinator(id string) string { return "coordinator-" + id }

// Element is external element name's member name (the scenario's
// external list; docs/external-elements.md).
func Element(name string) string { return "element-" + name }

// Creds are one member's credentials for one run.
type Creds struct {
	Run  string `json:"run"`
	Name string `json:"name"`
	// Seed is the member's nkey seed (secret).
	Seed string `json:"seed"`
	// ServerAuth says the run's NATS server knows the members' keys and
	// enforces their permissions (the embedded server): the member logs
	// in with its key, and a message's subject attributes it.
	ServerAuth bool `json:"server_auth"`
	// The public keys of every member.
	LauncherKey     string            `json:"launcher_key"`
	CoordinatorKeys map[string]string `json:"coordinator_keys"` // by replica id
	NodeKeys        []string          `json:"node_keys"`        // by partition
	// Elements, of a node's, are the external elements its partition
	// steps (the subjects it may call; a node that runs its own server
	// sets its permissions from them).
	Elements []string `json:"elements,omitempty"`

	kp nkeys.KeyPair
}

// Set is every member's credentials for one run.
type Set struct {
	Launcher     *Creds
	Coordinators map[string]*Creds // by replica id
	Nodes        []*Creds          // by partition
	// Elements are the external elements' (AddElements), by element
	// name, and NodeElements the names of the elements each partition
	// steps. An element's key is only its login: it signs nothing that
	// the members check.
	Elements     map[string]*Creds
	NodeElements [][]string
}

// AddElements makes a key for each external element of the run; byPart
// lists, by partition, the elements that partition steps (its node may
// call them, and only them).
func (s *Set) AddElements(byPart [][]string) error {
	s.Elements, s.NodeElements = map[string]*Creds{}, byPart
	for i, els := range byPart {
		if i < len(s.Nodes) {
			s.Nodes[i].Elements = els
		}
		for _, el := range els {
			kp, err := nkeys.CreateUser()
			if err != nil {
				return fmt.Errorf("member: %w", err)
			}
			seed, _ := kp.Seed()
			s.Elements[el] = &Creds{Run: s.Launcher.Run, Name: Element(el), Seed: string(seed), ServerAuth: s.Launcher.ServerAuth, kp: kp}
		}
	}
	return nil
}

// NewSet makes fresh keys (crypto/rand) for a run with the given
// coordinator replica ids and p nodes.
func NewSet(run string, coordinators []string, p int, serverAuth bool) (*Set, error) {
	mk := func(name string) (*Creds, error) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, fmt.Errorf("member: %w", err)
		}
		seed, _ := kp.Seed()
		return &Creds{Run: run, Name: name, Seed: string(seed), ServerAuth: serverAuth, kp: kp}, nil
	}
	s := &Set{Coordinators: map[string]*Creds{}}
	var err error
	if s.Launcher, err = mk(Launcher); err != nil {
		return nil, err
	}
	for _, id := range coordinators {
		if s.Coordinators[id], err = mk(Coordinator(id)); err != nil {
			return nil, err
		}
	}
	for i := 0; i < p; i++ {
		c, err := mk(Node(i))
		if err != nil {
			return nil, err
		}
		s.Nodes = append(s.Nodes, c)
	}
	ck := map[string]string{}
	for id, c := range s.Coordinators {
		ck[id] = c.Public()
	}
	var nk []string
	for _, c := range s.Nodes {
		nk = append(nk, c.Public())
	}
	for _, c := range s.All() {
		c.LauncherKey, c.CoordinatorKeys, c.NodeKeys = s.Launcher.Public(), ck, nk
	}
	return s, nil
}

// All lists every member's credentials: launcher, coordinators by id,
// nodes by partition.
func (s *Set) All() []*Creds {
	out := []*Creds{s.Launcher}
	for _, id := range slices.Sorted(maps.Keys(s.Coordinators)) {
		out = append(out, s.Coordinators[id])
	}
	return append(out, s.Nodes...)
}

func (c *Creds) keys() (nkeys.KeyPair, error) {
	if c.kp != nil {
		return c.kp, nil
	}
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return nil, fmt.Errorf("member %s: bad seed: %w", c.Name, err)
	}
	c.kp = kp
	return kp, nil
}

// Public is the member's public key.
func (c *Creds) Public() string {
	kp, err := c.keys()
	if err != nil {
		return ""
	}
	pub, _ := kp.PublicKey()
	return pub
}

// Sign signs msg with the member's key.
func (c *Creds) Sign(msg []byte) []byte {
	kp, err := c.keys()
	if err != nil {
		return nil
	}
	sig, _ := kp.Sign(msg)
	return sig
}

// Verify reports whether sig is pub's signature of msg.
func Verify(pub string, msg, sig []byte) bool {
	if pub == "" || len(sig) == 0 {
		return false
	}
	kp, err := nkeys.FromPublicKey(pub)
	if err != nil {
		return false
	}
	return kp.Verify(msg, sig) == nil
}

// Options are the NATS client options of the member: its login (when the
// server knows the members' keys) and a reply inbox under its own
// subjects.
func (c *Creds) Options() ([]nats.Option, error) {
	subj, err := wire.NewSubjects(c.Run)
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.CustomInboxPrefix(subj.Inbox(c.Name))}
	if c.ServerAuth {
		kp, err := c.keys()
		if err != nil {
			return nil, err
		}
		pub, _ := kp.PublicKey()
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	}
	return opts, nil
}

// ByAuthority reports whether sig is the launcher's or a coordinator's
// signature of msg (the members that may abort a run or serve a setup).
func (c *Creds) ByAuthority(msg, sig []byte) bool {
	if Verify(c.LauncherKey, msg, sig) {
		return true
	}
	for _, k := range c.CoordinatorKeys {
		if Verify(k, msg, sig) {
			return true
		}
	}
	return false
}

// TrustsAbort says whether member c (nil: a run without member keys, which
// trusts every abort) acts on a: it must be signed by the launcher or a
// coordinator, unless the server itself lets only them publish on the
// abort subject (then an unsigned abort is theirs, and a signed one must
// still verify).
func (c *Creds) TrustsAbort(a *wire.Abort) bool {
	if c == nil || (c.ServerAuth && len(a.Sig) == 0) {
		return true
	}
	return c.ByAuthority(wire.AbortMessage(c.Run, a), a.Sig)
}

// Abort is an abort from member c with reason, signed (c may be nil: an
// unsigned abort, for runs without member keys).
func (c *Creds) Abort(reason string) wire.Abort {
	if c == nil {
		return wire.Abort{Reason: reason}
	}
	a := wire.Abort{Reason: reason, From: c.Name}
	a.Sig = c.Sign(wire.AbortMessage(c.Run, &a))
	return a
}

// Write writes c to path, readable by its owner only.
func Write(path string, c *Creds) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// FromEnv loads the credentials the environment names (nil, nil if
// LOCKSTEP_CREDENTIALS is unset).
func FromEnv() (*Creds, error) {
	path := os.Getenv(Env)
	if path == "" {
		return nil, nil
	}
	c, err := Load(path)
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", Env, err)
	}
	return c, nil
}

// Load reads the credentials file at path.
func Load(path string) (*Creds, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Creds
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := c.keys(); err != nil {
		return nil, err
	}
	if c.Run == "" || c.Name == "" {
		return nil, errors.New("member: credentials without a run or a name")
	}
	return &c, nil
}

// TrustsRollback says whether member c acts on rollback r: as for an
// abort (TrustsAbort), signed by a coordinator or the launcher unless the
// server lets only them publish on the rollback subject.
func (c *Creds) TrustsRollback(r *wire.Rollback) bool {
	if c == nil || (c.ServerAuth && len(r.Sig) == 0) {
		return true
	}
	return c.ByAuthority(wire.RollbackMessage(c.Run, r), r.Sig)
}

// SignRollback signs r as member c (nil: unsigned, for runs without
// member keys).
func (c *Creds) SignRollback(r *wire.Rollback) {
	if c == nil {
		return
	}
	r.From, r.Sig = c.Name, nil
	r.Sig = c.Sign(wire.RollbackMessage(c.Run, r))
}
