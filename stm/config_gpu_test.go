package stm

import "testing"

// TestDefaultThreads: without Options.ClientThreads a run keeps about
// LogSize/16 update transactions in flight per server, more threads when
// most transactions are read-only, and more again for update transactions
// that wait for a read-only one in their warp (not when the workload is
// skewed or its transactions write more than STM_SPL items), at most one
// per two items, at least a warp.
func TestDefaultThreads(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Workload
		cfg  Config
		want int
	}{
		{"1M accounts, updates only", Bank{Accounts: 1 << 20, Initial: 1, Rounds: 1}, Config{}, 256},
		{"1M accounts, updates only, 4 servers", Bank{Accounts: 1 << 20, Initial: 1, Rounds: 1}, Config{Servers: 4}, 1024},
		{"1M accounts, read-only only", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 1, ReadSize: 100}, Config{}, 256 * 64},
		{"1M accounts, 10% read-only", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.1, ReadSize: 100}, Config{Servers: 16}, 4096 / 0.9 * 3.6},
		{"1M accounts, 50% read-only", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.5, ReadSize: 100}, Config{Servers: 16}, 4096 * 2 * 2.5},
		{"1M accounts, 90% read-only", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.9, ReadSize: 100}, Config{Servers: 16}, 4096 * 10 * 1.3},
		{"1M accounts, 10% read-only, Zipf 0.99", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.1, ReadSize: 100, Zipf: 0.99}, Config{Servers: 16}, 4551},
		{"1M accounts, 10% read-only, 2 rounds", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.1, ReadSize: 100, Rounds: 2}, Config{Servers: 16}, 16384},
		{"1M accounts, 10% read-only, 4 rounds", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.1, ReadSize: 100, Rounds: 4}, Config{Servers: 16}, 4551},
		{"small store", Bank{Accounts: 300, Initial: 1, Rounds: 1}, Config{}, 150},
		{"two items", CUDA{Body: "x", Size: 2}, Config{}, 32},
		{"tiny log", RMW{Size: 1 << 20, Keys: 1}, Config{LogSize: 16}, 32},
	} {
		sp, err := tc.w.spec()
		if err != nil {
			t.Fatal(err)
		}
		cfg := tc.cfg.withDefaults().forItems(tc.w.Items())
		if got := defaultThreads(sp, cfg, tc.w.Items(), 1, false); got < tc.want*9/10 || got > tc.want*11/10 {
			t.Errorf("%s: %d threads, want about %d", tc.name, got, tc.want)
		}
	}
}

// TestDefaultThreadsChained: a skewed workload whose lost attempts chain
// gets chainedWarpFactor for its update transactions that wait for a
// read-only one in their warp, below chainedFactorReadOnly read-only; one that
// is all updates, or more read-only, gets none, and an unskewed one keeps
// readOnlyWarpFactor.
func TestDefaultThreadsChained(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Bank
		want float64
	}{
		{"10% read-only, Zipf 0.99", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.1, ReadSize: 100, Zipf: 0.99}, 4551 * (1 + (chainedWarpFactor-1)*0.9*0.966)},
		{"20% read-only, Zipf 0.99", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.2, ReadSize: 100, Zipf: 0.99}, 5120 * (1 + (chainedWarpFactor-1)*0.8)},
		{"0% read-only, Zipf 0.99", Bank{Accounts: 1 << 20, Initial: 1, ReadSize: 100, Zipf: 0.99}, 4096},
		{"10% read-only, uniform", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.1, ReadSize: 100}, 4096 / 0.9 * 3.6},
		{"50% read-only, Zipf 0.99 (chains forced): none", Bank{Accounts: 1 << 20, Initial: 1, ReadOnly: 0.5, ReadSize: 100, Zipf: 0.99}, 4096 * 2},
	} {
		sp, err := tc.w.spec()
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Servers: 16}.withDefaults().forItems(tc.w.Items())
		if got := defaultThreads(sp, cfg, tc.w.Items(), 1, true); float64(got) < tc.want*0.9 || float64(got) > tc.want*1.1 {
			t.Errorf("%s: %d threads, want about %.0f", tc.name, got, tc.want)
		}
	}
}

// TestDefaultServerFitsAnH100: the default log, server warps and scratch
// fit the shared memory an sm_90 block may opt in to (227 KiB), with the
// built-in workloads' shapes.
func TestDefaultServerFitsAnH100(t *testing.T) {
	const h100 = 232448
	for _, w := range []Workload{Bank{Accounts: 1000, Initial: 1, ReadOnly: 0.5, Rounds: 64}, Memcached{Slots: 1 << 10, Ways: 256, Gets: 0.9, Zipf: 0.99}} {
		sp, err := w.spec()
		if err != nil {
			t.Fatal(err)
		}
		for _, hist := range []int{0, 2} {
			if sh := gpuShape(sp, Config{}.withDefaults(), Options{}, hist); sh.serverSmem > h100 {
				t.Errorf("%s: the default server needs %d bytes of shared memory, an H100 block has %d", w.Name(), sh.serverSmem, h100)
			}
		}
	}
}

// TestDefaultServers: without Config.Servers the GPU engine gives one
// server per 8 SMs, but a store too small to keep them busy (each wants
// LogSize/16 transactions in flight, and a store runs one per two items)
// gets fewer, partitions stay 8 times wider than the block a transaction
// stays in (the whole store: one server), and every store gets at least
// one.
func TestDefaultServers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		sms, n, span int
		cfg          Config
		want         int
	}{
		{"H200, 1M accounts, blocks of 100", 132, 1_000_000, 100, Config{}, 16},
		{"H200, 1M accounts, transfers anywhere", 132, 1_000_000, 1_000_000, Config{}, 1},
		{"H200, 1M accounts, span unknown", 132, 1_000_000, 0, Config{}, 16},
		{"H200, 1M accounts, blocks of 200000", 132, 1_000_000, 200_000, Config{}, 1},
		{"H200, 1M accounts, blocks of 40000", 132, 1_000_000, 40_000, Config{}, 3},
		{"H200, 6000 accounts, blocks of 100", 132, 6000, 100, Config{}, 7},
		{"H200, 6000 accounts, blocks of 1000", 132, 6000, 1000, Config{}, 1},
		{"H200, 1000 accounts", 132, 1000, 1, Config{}, 1},
		{"H200, 2 items", 132, 2, 1, Config{}, 1},
		{"H200, 1M accounts, log of 64", 132, 1_000_000, 100, Config{LogSize: 64}, 16},
		{"small GPU, 1M accounts", 20, 1_000_000, 100, Config{}, 2},
		{"tiny GPU, 1M accounts", 7, 1_000_000, 100, Config{}, 1},
		{"many SMs", 2000, 100_000_000, 100, Config{}, MaxServers},
	} {
		if got := defaultServers(tc.sms, tc.cfg.withDefaults(), tc.n, tc.span); got != tc.want {
			t.Errorf("%s: %d servers, want %d", tc.name, got, tc.want)
		}
	}
}

// TestAlignedPartitions: with servers chosen from the device, partitions
// are whole blocks of the workload's span, and the servers are those the
// rounded partitions leave non-empty.
func TestAlignedPartitions(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		n, servers, span      int
		wantPart, wantServers int
	}{
		{"64K accounts, blocks of 100", 65536, 8, 100, 8200, 8},
		{"1M accounts, blocks of 100", 1_000_000, 8, 100, 125_000, 8},
		{"6000 accounts, blocks of 100", 6000, 5, 100, 1200, 5},
		{"1000 accounts, blocks of 300", 1000, 3, 300, 600, 2},
		{"span unknown", 65536, 8, 0, 8192, 8},
		{"one item per block", 65537, 8, 1, 8193, 8},
		{"one block", 1000, 1, 1000, 1000, 1},
	} {
		part, servers := alignedPartitions(tc.n, tc.servers, tc.span)
		if part != tc.wantPart || servers != tc.wantServers {
			t.Errorf("%s: partitions of %d over %d servers, want %d over %d", tc.name, part, servers, tc.wantPart, tc.wantServers)
		}
		if tc.span > 1 && tc.span < tc.n && part%tc.span != 0 {
			t.Errorf("%s: partitions of %d split blocks of %d", tc.name, part, tc.span)
		}
	}
}

// TestWorkloadSpans: the built-in workloads say which block their update
// transactions stay in, so that the default servers keep them inside one
// partition.
func TestWorkloadSpans(t *testing.T) {
	for _, tc := range []struct {
		w    Workload
		want int
	}{
		{Bank{Accounts: 1000, Initial: 1, ReadSize: 100}, 100},
		{Bank{Accounts: 1000, Initial: 1}, 1000},
		{Memcached{Slots: 1 << 10, Ways: 8, Gets: 0.9}, 8},
		{RMW{Size: 128, Keys: 4}, 128},
		{RMW{Size: 128, Keys: 1}, 1},
		{CUDA{Body: "x", Size: 8}, 0},
	} {
		sp, err := tc.w.spec()
		if err != nil {
			t.Fatal(err)
		}
		if sp.span != tc.want {
			t.Errorf("%s: span %d, want %d", tc.w.Name(), sp.span, tc.want)
		}
	}
}

// TestChooseStripe: Options.Stripe 0 keeps contiguous partitions, a
// positive value is the items of a stripe (at most the store's), and a
// negative one is an error.
func TestChooseStripe(t *testing.T) {
	for _, tc := range []struct {
		opt, n, want int
		wantErr      bool
	}{
		{0, 65536, 0, false},
		{100, 65536, 100, false},
		{1, 3, 1, false},
		{1000, 64, 64, false},
		{-1, 65536, 0, true},
	} {
		got, err := chooseStripe(tc.opt, tc.n)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("stripe %d of %d items: %d, error %v; want %d, error %v", tc.opt, tc.n, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestShapeCompilesInWhatRunsUse: the in-place retries (Options.Refresh)
// are compiled into a program exactly when a run uses them (by default
// for a skewed workload that does not chain its lost attempts), the
// chained attempts (Options.Chain) with their passes when used (by
// default for a skewed workload of small write sets, below
// ChainAutoReadOnly read-only, with
// direct commits), the migration of held-back tickets (Options.Migrate)
// with its hold-backs when used (by default for such a workload of write
// sets of at least MigrateAutoWrites items), and the stripes
// (Options.Stripe) when set, so that other runs keep the code they had
// without them.
func TestShapeCompilesInWhatRunsUse(t *testing.T) {
	zipf := Bank{Accounts: 65536, Initial: 1, ReadSize: 100, Zipf: 0.99}
	zipfHalf := Bank{Accounts: 65536, Initial: 1, ReadSize: 100, Zipf: 0.99, ReadOnly: 0.5}
	zipfMostlyRead := Bank{Accounts: 65536, Initial: 1, ReadSize: 100, Zipf: 0.99, ReadOnly: 0.9}
	zipf2 := Bank{Accounts: 65536, Initial: 1, ReadSize: 100, Zipf: 0.99, Rounds: 2}
	zipf4 := Bank{Accounts: 65536, Initial: 1, ReadSize: 100, Zipf: 0.99, Rounds: 4}
	rmw4 := RMW{Size: 1 << 16, Keys: 4, Zipf: 0.99}
	mcPuts := Memcached{Slots: 1 << 12, Ways: 4, Gets: 0.1, Zipf: 0.99}
	uniform := Bank{Accounts: 65536, Initial: 1, ReadSize: 100}
	for _, tc := range []struct {
		name                   string
		w                      Workload
		opt                    Options
		wantRefresh            int
		wantShape, wantStripe  bool
		wantChain, wantMigrate int
	}{
		{"zipf, defaults: chained, no retries", zipf, Options{}, 0, false, false, DefaultChain, 0},
		{"zipf, chains off: retries", zipf, Options{Chain: -1}, DefaultRefresh, true, false, 0, 0},
		{"zipf, servers: retries, no chains", zipf, Options{Commit: CommitServers}, DefaultRefresh, true, false, 0, 0},
		{"zipf, 3 passes and 2 retries", zipf, Options{Chain: 3, Refresh: 2}, 2, true, false, 3, 0},
		{"zipf, half read-only: chained, no retries", zipfHalf, Options{}, 0, false, false, DefaultChain, 0},
		{"zipf, 90% read-only: retries", zipfMostlyRead, Options{}, DefaultRefresh, true, false, 0, 0},
		{"zipf, 2-round transfers: chained, no retries", zipf2, Options{}, 0, false, false, DefaultChain, DefaultMigrate},
		{"zipf, 2-round transfers: migration off", zipf2, Options{Migrate: -1}, 0, false, false, DefaultChain, 0},
		{"zipf, 2-round transfers, chains off: no migration", zipf2, Options{Chain: -1, Migrate: 1}, DefaultRefresh, true, false, 0, 0},
		{"zipf, migration after 1 hold-back", zipf, Options{Migrate: 1}, 0, false, false, DefaultChain, 1},
		{"zipf, 4-round transfers (8 writes): retries", zipf4, Options{}, DefaultRefresh, true, false, 0, 0},
		{"zipf, read-modify-writes of 4 keys: chained", rmw4, Options{}, 0, false, false, DefaultChain, DefaultMigrate},
		{"zipf, memcached PUTs (they read other ways): retries", mcPuts, Options{}, DefaultRefresh, true, false, 0, 0},
		{"zipf, retries and chains off", zipf, Options{Refresh: -1, Chain: -1}, 0, false, false, 0, 0},
		{"uniform, defaults", uniform, Options{}, 0, false, false, 0, 0},
		{"uniform, 3 retries, stripes of 100", uniform, Options{Refresh: 3, Stripe: 100}, 3, true, true, 0, 0},
	} {
		sp, err := tc.w.spec()
		if err != nil {
			t.Fatal(err)
		}
		sh := gpuShape(sp, Config{}.withDefaults(), tc.opt, 0)
		if r := refreshFor(tc.opt, sp); r != tc.wantRefresh || sh.refresh != tc.wantShape || sh.stripes != tc.wantStripe || sh.chain != tc.wantChain || sh.migrate != tc.wantMigrate {
			t.Errorf("%s: %d retries, compiled in %v, stripes %v, %d chained passes, migration after %d; want %d, %v, %v, %d, %d",
				tc.name, r, sh.refresh, sh.stripes, sh.chain, sh.migrate, tc.wantRefresh, tc.wantShape, tc.wantStripe, tc.wantChain, tc.wantMigrate)
		}
	}
}
