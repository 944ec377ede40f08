// Command etcd is an etcd v3.7.3 server built from go.etcd.io/etcd/server/v3's
// embed package for gavel's end-to-end suite (see ../../build.sh). It serves
// one member with the flags the suite needs and stops on SIGINT or SIGTERM.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "default.etcd", "directory of the member's data")
	client := flag.String("listen-client-urls", "http://127.0.0.1:2379", "URL the clients dial")
	peer := flag.String("listen-peer-urls", "http://127.0.0.1:2380", "URL of the peer listener")
	flag.Parse()

	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("etcd: -listen-client-urls: %v", err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("etcd: -listen-peer-urls: %v", err)
	}
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "error"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: %v", err)
	}
	defer e.Close()
	<-e.Server.ReadyNotify()
	log.Printf("etcd: ready on %s", cu)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Fatalf("etcd: %v", err)
	}
}
