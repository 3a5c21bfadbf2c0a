package replicator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// aliveWithin is how recently the reader must have checked in for Alive:
// it checks in on every event and heartbeat (1 s), on every reconnect
// attempt and while waiting on a full writer queue or a backoff.
const aliveWithin = 45 * time.Second

// OnReady sets a function Run calls once it has connected and loaded the
// checkpoint (for systemd's READY=1). Call it before Run.
func (r *Replicator) OnReady(f func()) { r.onReady = f }

// Alive reports whether the reader's loop is running: it checked in within
// the last 45 seconds, whatever it was doing (reading, reconnecting, or
// waiting for a writer). A stalled server does not make it false; a wedged
// daemon does.
func (r *Replicator) Alive() bool {
	last := r.live.CheckIn.Load()
	return last != 0 && time.Since(time.Unix(0, last)) < aliveWithin
}

func (r *Replicator) checkIn() { r.live.CheckIn.Store(time.Now().UnixNano()) }

// ready reports readiness: both servers reachable as last seen, and the
// lag below metrics.ready_max_lag.
func (r *Replicator) ready() bool {
	return r.live.MySQLUp.Load() && r.sink.Up() && r.m.Lag() < r.cfg.Metrics.ReadyMaxLag.Seconds()
}

// health is the body of /healthz and /readyz.
type health struct {
	Ready           bool    `json:"ready"`
	Alive           bool    `json:"alive"`
	MySQL           bool    `json:"mysql_connected"`
	ClickHouse      bool    `json:"clickhouse_reachable"`
	LagSeconds      float64 `json:"lag_seconds"`
	SourceLag       float64 `json:"source_lag_seconds"`
	ReadPosition    string  `json:"read_position"`
	CheckpointAt    string  `json:"checkpoint"`
	MaxLagForReady  float64 `json:"ready_max_lag_seconds"`
	ClickHouseError string  `json:"clickhouse_error,omitempty"`
}

func (r *Replicator) health() health {
	st := health{Alive: r.Alive(), MySQL: r.live.MySQLUp.Load(), ClickHouse: r.sink.Up(),
		LagSeconds: r.m.Lag(), SourceLag: r.m.SourceLag(), MaxLagForReady: r.cfg.Metrics.ReadyMaxLag.Seconds()}
	if p := r.live.ReadPos.Load(); p != nil {
		st.ReadPosition = p.String()
	}
	if p := r.live.SavedPos.Load(); p != nil {
		st.CheckpointAt = p.String()
	}
	st.Ready = r.ready()
	return st
}

// serveHTTP listens on metrics.listen and serves the status page (/ and
// /status.json), /metrics, /healthz and /readyz until ctx ends. The listener is open when it returns.
func (r *Replicator) serveHTTP(ctx context.Context) (stop func(), err error) {
	ln, err := net.Listen("tcp", r.cfg.Metrics.Listen)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w", r.cfg.Metrics.Listen, err)
	}
	r.httpAddr.Store(ln.Addr().String())
	mux := http.NewServeMux()
	r.statusPage.Register(mux)
	mux.Handle("/metrics", promhttp.HandlerFor(r.m.Registry, promhttp.HandlerOpts{ErrorLog: nil}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		st := r.health()
		code := http.StatusOK
		if !st.Alive {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, st)
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, req *http.Request) {
		// ClickHouse may have gone away while nothing was being sent: ask.
		pctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		err := r.sink.Ping(pctx)
		cancel()
		st := r.health()
		if err != nil {
			st.ClickHouseError = err.Error()
		}
		code := http.StatusOK
		if !st.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, st)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		r.statusPage.Run(sampleCtx) // rows/s for the status page
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.log.Error("metrics endpoint stopped", "error", err)
		}
	}()
	r.log.Info("serving /metrics, /healthz, /readyz and the status page (/, /status.json)", "listen", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
		stopSampling()
		<-sampled
	}, nil
}

// MetricsAddr is the address the metrics endpoint listens on, once Run
// has started it ("" before).
func (r *Replicator) MetricsAddr() string {
	a, _ := r.httpAddr.Load().(string)
	return a
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
