//go:build k8sapi

package k8sapi

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestControlPlane_ListensOnLoopbackOnly reads every socket the control
// plane's processes hold (/proc/PID/fd) against /proc/net/{tcp,tcp6,udp,udp6}:
// each listening or bound one must be on 127.0.0.1 or ::1.
func TestControlPlane_ListensOnLoopbackOnly(t *testing.T) {
	n := 0
	for _, p := range cp.procs {
		socks, err := listeners(p.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if len(socks) == 0 {
			continue
		}
		for _, s := range socks {
			n++
			if !s.ip.IsLoopback() {
				t.Errorf("%s listens on %s (%s), not on loopback", p.name, net.JoinHostPort(s.ip.String(), strconv.Itoa(s.port)), s.proto)
			}
		}
		t.Logf("%s: %v", p.name, socks)
	}
	if n == 0 {
		t.Fatal("no listening socket found at all: the check reads nothing")
	}
}

type sock struct {
	proto string
	ip    net.IP
	port  int
}

func (s sock) String() string {
	return s.proto + " " + net.JoinHostPort(s.ip.String(), strconv.Itoa(s.port))
}

// listeners are the TCP sockets in LISTEN and the bound UDP sockets that
// process pid holds.
func listeners(pid int) ([]sock, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []sock
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "net", proto))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fl := strings.Fields(sc.Text())
			if len(fl) < 10 || !inodes[fl[9]] {
				continue
			}
			// TCP: only LISTEN (0A). UDP: any bound socket (07, "close").
			if strings.HasPrefix(proto, "tcp") && fl[3] != "0A" {
				continue
			}
			ip, port, err := parseProcAddr(fl[1])
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %q: %w", proto, fl[1], err)
			}
			out = append(out, sock{proto, ip, port})
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseProcAddr parses /proc/net's "0100007F:1F90": the address as
// 32-bit words in host (little-endian) order, then the port in hex.
func parseProcAddr(s string) (net.IP, int, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, fmt.Errorf("no port")
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, 0, fmt.Errorf("bad address")
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, err
	}
	return net.IP(b), int(port), nil
}
