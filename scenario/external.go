package scenario

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/topologies"
)

// External is one entry of the scenario's external list: a switch (or
// the switches a pattern names) that runs outside lockstep as an external
// element, reached on the run's NATS server at the subjects
// lockstep.<run>.element.<element>.* (docs/external-elements.md).
type External struct {
	// Switch is a switch's name, or a pattern over the names (path.Match:
	// "core*", "tor[0-3]") that names every switch it matches.
	Switch string `yaml:"switch" lockstep:"required"`
	// Element is the element's name in its subjects (default: the
	// switch's name); with one switch's name only.
	Element string `yaml:"element" json:",omitempty"`
}

// ExternalElement is one switch that runs as an external element.
type ExternalElement struct {
	Node    int    // the topology node
	Element string // its name in the subjects
}

// MaxExternal bounds the external elements of one run.
const MaxExternal = 4096

// elementName is what an element's name may be: one NATS subject token.
var elementName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// external resolves the external list against the topology: every entry
// names at least one switch and no host, no switch is named twice, and
// every element name is a subject token used once. The elements come
// back in node order.
func (l *loader) external(s *Scenario, t *topologies.Topology) ([]ExternalElement, error) {
	if len(s.External) == 0 {
		return nil, nil
	}
	if s.Compat != "" {
		return nil, l.errf("external", "the %s profile has no switches to replace", s.Compat)
	}
	byNode := map[int]int{}       // node -> entry
	byElement := map[string]int{} // element name -> node
	var out []ExternalElement
	for i := range s.External {
		e := &s.External[i]
		p := fmt.Sprintf("external[%d]", i)
		if e.Switch == "" {
			return nil, l.errf(p+".switch", "is required: a switch's name or a pattern such as core*")
		}
		pattern := strings.ContainsAny(e.Switch, `*?[\`)
		if _, err := path.Match(e.Switch, ""); errors.Is(err, path.ErrBadPattern) {
			return nil, l.errf(p+".switch", "%q is not a valid pattern", e.Switch)
		}
		if pattern && e.Element != "" {
			return nil, l.errf(p+".element", "only with one switch's name: the switches of pattern %q are named by their own names", e.Switch)
		}
		var nodes []int
		hosts := 0
		for n := range t.Nodes {
			nd := &t.Nodes[n]
			if ok, _ := path.Match(e.Switch, nd.Name); !ok {
				continue
			}
			if nd.Kind != topologies.Switch {
				if !pattern {
					return nil, l.errf(p+".switch", "%s is a host: only switches run as external elements", e.Switch)
				}
				hosts++
				continue
			}
			nodes = append(nodes, n)
		}
		if len(nodes) == 0 {
			if hosts > 0 {
				return nil, l.errf(p+".switch", "pattern %q matches hosts only: only switches run as external elements", e.Switch)
			}
			return nil, l.errf(p+".switch", "no switch named %q", e.Switch)
		}
		for _, n := range nodes {
			name := t.Nodes[n].Name
			if j, dup := byNode[n]; dup {
				return nil, l.errf(p+".switch", "switch %s is already external (external[%d])", name, j)
			}
			byNode[n] = i
			el := e.Element
			if el == "" {
				el = name
			}
			if !elementName.MatchString(el) {
				if e.Element != "" {
					return nil, l.errf(p+".element", "%q is not an element name: 1 to 64 letters, digits, - and _", el)
				}
				return nil, l.errf(p+".switch", "switch %q cannot name its element (1 to 64 letters, digits, - and _): give element", name)
			}
			if m, dup := byElement[el]; dup {
				return nil, l.errf(p+".element", "element name %s is already switch %s's", el, t.Nodes[m].Name)
			}
			byElement[el] = n
			out = append(out, ExternalElement{Node: n, Element: el})
		}
		if len(out) > MaxExternal {
			return nil, l.errf(p, "more than %d external elements", MaxExternal)
		}
	}
	sortElements(out)
	return out, nil
}

func sortElements(xs []ExternalElement) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j].Node < xs[j-1].Node; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// unconnected is an external element's peer until the run connects it
// (ConnectExternal): building a fabric contacts no element, and a run
// that was not given a connection fails at its first window, naming the
// element.
type unconnected struct{}

var errUnconnected = errors.New("not connected: the run has no NATS connection for its external elements (lockstep run --nats URL --run-id ID; docs/external-elements.md)")

func (u unconnected) Setup([]byte) error          { return errUnconnected }
func (u unconnected) Step([]byte) ([]byte, error) { return nil, errUnconnected }

// ConnectExternal gives every external element of b its peer, made by
// peer from the element's name (e.g. a natspeer.Peer on the run's
// subjects). Partitions share b: each uses the peers of its own nodes.
func (b *Built) ConnectExternal(peer func(element string) fabric.ExternalPeer) {
	if len(b.External) == 0 {
		return
	}
	m := make(map[int]fabric.ExternalPeer, len(b.External))
	for _, x := range b.External {
		m[x.Node] = peer(x.Element)
	}
	b.Fabric.External = m
}
