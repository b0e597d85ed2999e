package ui

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"time"
)

//go:embed assets
var assets embed.FS

// Handler serves the page and the API of docs/ui.md for m.
func Handler(m *Model) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/topology", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, m.Topology()) })
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, m.State()) })
	mux.HandleFunc("GET /api/progress", func(w http.ResponseWriter, _ *http.Request) {
		p, _ := m.Progress()
		writeJSON(w, p)
	})
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		fl, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		for {
			p, changed := m.Progress()
			b, _ := json.Marshal(p)
			fmt.Fprintf(w, "event: progress\ndata: %s\n\n", b)
			fl.Flush()
			if p.Finished {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-changed:
			}
			// At most four events a second.
			select {
			case <-r.Context().Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// Serve listens on addr, which must be a loopback address, and serves m
// until ctx ends. It returns the address it listens on once listening,
// and a function that waits for the server to stop.
func Serve(ctx context.Context, addr string, m *Model) (string, func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("--ui %s: want HOST:PORT, e.g. 127.0.0.1:8080", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", nil, fmt.Errorf("--ui %s: the live view listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--ui %s: %v", addr, err)
	}
	srv := &http.Server{Handler: Handler(m), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr().String(), func() { <-done }, nil
}
