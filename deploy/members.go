package deploy

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
)

// Who may publish and subscribe on what (docs/decisions.md, "Members and
// credentials"). A subject a node publishes on ends with its index, so
// the server attributes every message: node i can speak only as node i
// (its reports, which every node hears, and its batches), and only
// coordinators ask for resends, publish the status and abort. A new subject a member publishes
// on must be added here, or the embedded server refuses it. A node says
// on ckpt.<i> that it stored its part of a checkpoint; only coordinators
// publish rollbacks.

// nodePermissions are node i's. Nodes hear every node's reports (the
// barrier is run among them: coordinator/barrier package doc, "Peers") and
// the leader's status (its heartbeat, internal/liveness); coordinators
// hear the nodes'.
func nodePermissions(s wire.Subjects, i int, elements []string) *server.Permissions {
	pub := []string{s.Prefix() + fmt.Sprintf("batch.*.%d", i), s.Report(i), s.Setup(), s.Result(i), s.NodeStatus(i), s.Checkpoint(i)}
	for _, el := range elements {
		// The external elements this partition steps (requests; their
		// answers come to its inbox).
		pub = append(pub, elementSubjects(s, el))
	}
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{
			s.Batches(i), s.Reports(), s.Resync(), s.Abort(), s.Status(), s.Rollback(), s.Inbox(member.Node(i)) + ".>"}},
	}
}

// elementSubjects are external element el's request subjects
// (natspeer.Subject: setup and step).
func elementSubjects(s wire.Subjects, el string) string { return s.Prefix() + "element." + el + ".*" }

// elementPermissions are external element el's: it hears requests on its
// own subjects and answers them, and publishes nothing else.
func elementPermissions(s wire.Subjects, el string) *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Deny: []string{">"}},
		Subscribe: &server.SubjectPermission{Allow: []string{elementSubjects(s, el)}},
		Response:  &server.ResponsePermission{MaxMsgs: 1},
	}
}

// coordinatorPermissions are coordinator replica id's: resync requests,
// status, aborts and rollbacks, and replies to setup requests; it hears
// the nodes' progress (their statuses, not their reports: the leader
// follows the run from them) and stored checkpoint parts, and the leader's
// status (a follower's --metrics).
func coordinatorPermissions(s wire.Subjects, id string) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{s.Resync(), s.Status(), s.Abort(), s.Rollback()}},
		Subscribe: &server.SubjectPermission{Allow: []string{
			s.NodeStatuses(), s.Status(), s.Setup(), s.Abort(), s.Checkpoints(), s.Inbox(member.Coordinator(id)) + ".>"}},
		Response: &server.ResponsePermission{MaxMsgs: 1},
	}
}

// launcherPermissions are the launcher's: aborts, and replies to result
// chunks; it hears results and progress.
func launcherPermissions(s wire.Subjects) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{s.Abort()}},
		Subscribe: &server.SubjectPermission{Allow: []string{
			s.Results(), s.Status(), s.NodeStatuses(), s.Abort(), s.Inbox(member.Launcher) + ".>"}},
		Response: &server.ResponsePermission{MaxMsgs: 1},
	}
}

// ServerOptions are the embedded NATS server's options for run: on
// loopback, with the wire's payload limit, and with set's members as its
// only users (nil set: anyone may connect).
func ServerOptions(run string, set *member.Set) (*server.Options, error) {
	subj, err := wire.NewSubjects(run)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: wire.MaxMessageBytes}
	if set != nil {
		opts.Nkeys = serverUsers(subj, set)
	}
	return opts, nil
}

// RouteUser is the user a node's own server (NodeServerOptions) presents
// on its routes, with the run's route token as its password; RouteTokenEnv
// names the environment variable that gives a node process that token
// (never its argv).
const (
	RouteUser     = "route"
	RouteTokenEnv = "LOCKSTEP_ROUTE_TOKEN"
)

// NodeServerOptions are the options of the NATS server a node process
// runs in process when `run --procs --nodes-serve` starts it: clients on
// a loopback port (the server starts no routing without a client
// listener), but one user, the node c itself, with node part's
// permissions (members.go: its server enforces on the node what the
// launcher's enforces on every member), and a route on loopback, with
// user RouteUser and the run's route token, to route (the launcher's
// server), from which the cluster's gossip gives it the other nodes'
// servers. No server of the cluster advertises the others' client ports
// to its clients. JetStream off.
func NodeServerOptions(c *member.Creds, part int, route, token string) (*server.Options, error) {
	subj, err := wire.NewSubjects(c.Run)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(route)
	if err != nil || u.Scheme != "nats" || u.Host == "" || u.User != nil || token == "" {
		return nil, fmt.Errorf("node %d: route %q: want nats://HOST:PORT and a route token in $%s", part, route, RouteTokenEnv)
	}
	if !c.ServerAuth {
		return nil, fmt.Errorf("node %d: its own server needs the members' keys (the embedded server's run)", part)
	}
	u.User = url.UserPassword(RouteUser, token)
	return &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: wire.MaxMessageBytes,
		Nkeys:   []*server.NkeyUser{{Nkey: c.Public(), Permissions: nodePermissions(subj, part, c.Elements)}},
		Cluster: RouteCluster(token), Routes: []*url.URL{u}}, nil
}

// RoutesOf is how many other servers ns has routes to (a route pool's
// connections to one server count once).
func RoutesOf(ns *server.Server) int {
	rz, err := ns.Routez(nil)
	if err != nil {
		return 0
	}
	peers := map[string]bool{}
	for _, r := range rz.Routes {
		peers[r.RemoteName] = true
	}
	return len(peers)
}

// RouteCluster is the cluster options of every server of a run whose
// node processes serve: routes on a loopback port, user RouteUser with
// password token, no client ports advertised, and one connection per
// pair of servers (PoolSize -1: NATS's default pool of three per pair
// forms more slowly at the start, and a run has one account, whose
// messages take one connection of a pool anyway). Every server of such a
// cluster is lockstep's, so they agree on it.
func RouteCluster(token string) server.ClusterOpts {
	return server.ClusterOpts{Name: "lockstep", Host: "127.0.0.1", Port: -1, Username: RouteUser, Password: token, NoAdvertise: true, PoolSize: -1}
}

// serverUsers are the embedded server's users: one nkey per member, with
// its permissions. Nobody else may connect.
func serverUsers(s wire.Subjects, set *member.Set) []*server.NkeyUser {
	users := []*server.NkeyUser{{Nkey: set.Launcher.Public(), Permissions: launcherPermissions(s)}}
	for id, c := range set.Coordinators {
		users = append(users, &server.NkeyUser{Nkey: c.Public(), Permissions: coordinatorPermissions(s, id)})
	}
	for i, c := range set.Nodes {
		var els []string
		if i < len(set.NodeElements) {
			els = set.NodeElements[i]
		}
		users = append(users, &server.NkeyUser{Nkey: c.Public(), Permissions: nodePermissions(s, i, els)})
	}
	for _, el := range slices.Sorted(maps.Keys(set.Elements)) {
		users = append(users, &server.NkeyUser{Nkey: set.Elements[el].Public(), Permissions: elementPermissions(s, el)})
	}
	return users
}

// violationLog is the embedded server's logger: it counts the
// connections it refused (authentication) and the messages and
// subscriptions it refused (permissions), and logs nothing.
type violationLog struct{ n atomic.Uint64 }

func (v *violationLog) Errorf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if strings.Contains(s, "Violation") || strings.Contains(s, server.ErrAuthentication.Error()) {
		v.n.Add(1)
	}
}
func (v *violationLog) Noticef(string, ...any) {}
func (v *violationLog) Warnf(string, ...any)   {}
func (v *violationLog) Fatalf(string, ...any)  {}
func (v *violationLog) Debugf(string, ...any)  {}
func (v *violationLog) Tracef(string, ...any)  {}

var _ server.Logger = (*violationLog)(nil)
