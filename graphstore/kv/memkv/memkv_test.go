package memkv_test

import (
	"testing"

	"github.com/mql-dev/mql/graphstore/kv/kvtest"
	"github.com/mql-dev/mql/graphstore/kv/memkv"
)

func TestKV(t *testing.T) { kvtest.Run(t, memkv.New(kvtest.Schema)) }
