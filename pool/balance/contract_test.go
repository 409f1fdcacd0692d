package balance_test

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/balance/statetest"
)

func TestMemoryContract(t *testing.T) {
	statetest.Run(t, func(*testing.T) balance.State { return balance.NewMemory() })
}
