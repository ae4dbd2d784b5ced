package difftest

import "testing"

func TestClientSuiteMemcached(t *testing.T) {
	ClientSuite(t, Memcached(t))
}
