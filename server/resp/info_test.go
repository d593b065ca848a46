package resp

import "testing"

func TestRenderInfo(t *testing.T) {
	sections := []InfoSection{
		{Name: "Server", Fields: [][2]string{{"redis_version", "7.2.0"}, {"memgest_version", "0.1.0"}}},
		{Name: "Clients", Fields: [][2]string{{"connected_clients", "1"}}},
		{Name: "Commandstats", Fields: [][2]string{{"cmdstat_get", "calls=1"}}, Extra: true},
		{Name: "Keyspace"},
	}
	server := "# Server\r\nredis_version:7.2.0\r\nmemgest_version:0.1.0\r\n"
	clients := "# Clients\r\nconnected_clients:1\r\n"
	stats := "# Commandstats\r\ncmdstat_get:calls=1\r\n"
	keyspace := "# Keyspace\r\n"
	cases := []struct {
		want []string
		out  string
	}{
		{nil, server + "\r\n" + clients + "\r\n" + keyspace},
		{[]string{"default"}, server + "\r\n" + clients + "\r\n" + keyspace},
		{[]string{"ALL"}, server + "\r\n" + clients + "\r\n" + stats + "\r\n" + keyspace},
		{[]string{"everything"}, server + "\r\n" + clients + "\r\n" + stats + "\r\n" + keyspace},
		{[]string{"server"}, server},
		{[]string{"KEYSPACE", "Server"}, server + "\r\n" + keyspace},
		{[]string{"commandstats"}, stats},
		{[]string{"default", "commandstats"}, server + "\r\n" + clients + "\r\n" + stats + "\r\n" + keyspace},
		{[]string{"server", "server"}, server},
		{[]string{"nosuch"}, ""},
	}
	for _, c := range cases {
		if got := string(RenderInfo(sections, c.want)); got != c.out {
			t.Errorf("%q:\ngot  %q\nwant %q", c.want, got, c.out)
		}
	}
}
