package chnativetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// forward stores an INSERT's data blocks in the real ClickHouse the script
// names (Script.Forward), through its HTTP interface: the query with
// FORMAT Native and the client's query id, the blocks as the client sent
// them (NativeReader at revision 0: no block info). It returns once the
// server has stored them, so that what the script sends next follows a
// block that really landed.
func (s *Server) forward(query, queryID string, blocks []Block) error {
	sc := &s.script
	var body bytes.Buffer
	for _, b := range blocks {
		var w blockWriter
		w.uvarint(uint64(len(b.Columns)))
		w.uvarint(uint64(b.Rows))
		for i, c := range b.Columns {
			w.column(c.Name, c.Type, b.Data[i])
		}
		body.Write(w.Bytes())
	}
	q := strings.TrimSpace(query)
	q = strings.TrimSpace(strings.TrimSuffix(q, "VALUES")) + " FORMAT Native"
	params := url.Values{"query": {q}, "query_id": {queryID}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+sc.Forward+"/?"+params.Encode(), &body)
	if err != nil {
		return err
	}
	if sc.ForwardUser != "" {
		req.Header.Set("X-ClickHouse-User", sc.ForwardUser)
		req.Header.Set("X-ClickHouse-Key", sc.ForwardPassword)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("forward the insert to %s: %w", sc.Forward, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("forward the insert to %s: HTTP %d: %s", sc.Forward, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}
