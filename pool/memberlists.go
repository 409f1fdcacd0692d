package pool

import (
	"context"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// A pool without models: accepts every model id and sends it unchanged, so its
// /v1/models lists what its members serve: what a channel declares (channel
// models:), and for a channel that declares nothing, its own model list,
// fetched like the editor's "Gather models" (editor.FetchModels, through the
// pool's Transport: the gateway selection) and kept for memberListTTL (a failed
// fetch for memberListRetry, so an unreachable channel is not asked on every
// list).

// memberListTTL is how long a fetched model list is served before the
// next list request fetches it again.
const memberListTTL = 10 * time.Minute

// memberListRetry is how long a failed fetch is remembered (no models from
// that channel meanwhile).
const memberListRetry = 30 * time.Second

// memberLists caches the members' fetched model lists by channel. Safe for
// concurrent use; one fetch round at a time.
type memberLists struct {
	mu    sync.Mutex
	byKey map[string]fetchedList
}

// fetchedList is one channel's fetched list and when it was fetched.
type fetchedList struct {
	at     time.Time
	models []config.ModelInfo
	err    error
}

// listKey names a channel's list: its id and base URL (a reload that
// points the id elsewhere fetches anew).
func listKey(ch *config.Channel) string { return ch.ID + "\x00" + ch.BaseURL }

// get returns the fetched lists of pc's members whose channel declares no
// models, by channel id (nil when pc has models: or every member
// declares), fetching those missing or older than memberListTTL, all at
// once, within editor.GatherTimeout. A channel whose fetch failed lists
// nothing; its error is logged once per fetch.
func (l *memberLists) get(ctx context.Context, p *Pool, cfg *config.Config, pc *config.PoolConfig) map[string][]config.ModelInfo {
	if len(pc.Models) > 0 {
		return nil
	}
	var chans []*config.Channel
	for _, m := range pc.Members {
		if ch := cfg.Channel(m); ch != nil && len(ch.Models) == 0 {
			chans = append(chans, ch)
		}
	}
	if len(chans) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey = map[string]fetchedList{}
	}
	now := p.opts.Now()
	_, scrub := p.config()
	// A client that leaves does not cut a fetch short: its failure would
	// be remembered for the next clients.
	ctx = context.WithoutCancel(ctx)
	// The fetches write their results into their own slot and the map is
	// written after wg.Wait: the loop reads l.byKey while fetches run, so a
	// fetch writing the map itself would race with that read.
	var wg sync.WaitGroup
	fetched := make([]*fetchedList, len(chans))
	for i, ch := range chans {
		f, ok := l.byKey[listKey(ch)]
		if ok && (f.err == nil && now.Sub(f.at) < memberListTTL || f.err != nil && now.Sub(f.at) < memberListRetry) {
			continue
		}
		wg.Add(1)
		go func(i int, ch *config.Channel) {
			defer wg.Done()
			models, err := editor.FetchModels(ctx, p.opts.Transport, ch)
			if err != nil {
				p.log.Warn("member's model list not fetched: /v1/models lists none of its models", "member", ch.ID, "reason", scrub.Scrub(err.Error()))
			}
			fetched[i] = &fetchedList{at: now, models: models, err: err}
		}(i, ch)
	}
	wg.Wait()
	for i, f := range fetched {
		if f != nil {
			l.byKey[listKey(chans[i])] = *f
		}
	}
	out := map[string][]config.ModelInfo{}
	for _, ch := range chans {
		out[ch.ID] = l.byKey[listKey(ch)].models
	}
	return out
}
