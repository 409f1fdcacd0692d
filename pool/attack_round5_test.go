package pool

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Attack round five: streams share their SSE read buffers (issue 20,
// wire.SSEReader.Release). Concurrent streams of which some clients leave
// mid-stream: every stream that stays gets only its own member's bytes
// (SPEC POOL-15, POOL-19) and the departures are cancelled (POOL-9).
func TestAttackRound5Streams(t *testing.T) {
	t.Run("POOL-19/concurrent-streams-with-departures-keep-their-own-bytes", func(t *testing.T) {
		markRe := regexp.MustCompile(`MARK-[0-9]+`)
		member := func(w http.ResponseWriter, r *http.Request, _ int) {
			mark := markRe.FindString(string(recordedBody(r)))
			sseHead(w)
			messageStart(w, mark, nil)
			for i := range 30 {
				textDelta(w, fmt.Sprintf("%s-%d:%s", mark, i, strings.Repeat(mark[5:6], 3000)))
				if r.Context().Err() != nil {
					return
				}
			}
			messageEnd(w)
		}
		w := newWorld(t, []string{"a"}, []behaviour{member}, "", Options{})
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for k := range 3 {
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mark := fmt.Sprintf("MARK-%d", k*n+i)
					body := fmt.Sprintf(`{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":%q}]}`, mark)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					resp := w.do(ctx, "/pool/p/v1/messages", map[string]string{"X-Claude-Code-Session-Id": mark}, body)
					defer resp.Body.Close()
					br := bufio.NewReader(resp.Body)
					deltas := 0
					for {
						line, err := br.ReadString('\n')
						if err == io.EOF {
							break
						}
						if err != nil {
							if i%2 == 1 {
								return
							}
							errs <- fmt.Errorf("%s: %v", mark, err)
							return
						}
						data, ok := strings.CutPrefix(line, "data: ")
						if !ok {
							continue
						}
						var ev struct {
							Type  string `json:"type"`
							Delta struct {
								Text string `json:"text"`
							} `json:"delta"`
						}
						if err := json.Unmarshal([]byte(data), &ev); err != nil {
							errs <- fmt.Errorf("%s: bad event %q: %v", mark, data, err)
							return
						}
						if ev.Type != "content_block_delta" {
							continue
						}
						want := fmt.Sprintf("%s-%d:%s", mark, deltas, strings.Repeat(mark[5:6], 3000))
						if ev.Delta.Text != want {
							errs <- fmt.Errorf("%s: delta %d is %.40q", mark, deltas, ev.Delta.Text)
							return
						}
						deltas++
						if i%2 == 1 && deltas == 3 {
							cancel() // leaves mid-stream
							return
						}
					}
					if deltas != 30 {
						errs <- fmt.Errorf("%s: %d deltas, want 30", mark, deltas)
					}
				}()
			}
			wg.Wait()
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}
