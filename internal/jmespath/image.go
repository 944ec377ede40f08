package jmespath

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// jpImageNormalize returns the canonical form of an image reference:
// "registry/path:tag" or "registry/path@digest" (a digest wins over a tag),
// with the default registry added when the reference names none and the tag
// "latest" when it has neither tag nor digest. Docker Hub paths are not
// expanded ("nginx" gives "docker.io/nginx:latest", as upstream).
func (i *Interpreter) jpImageNormalize(args []any) (any, error) {
	image := args[0].(string)
	full := image
	if k := strings.IndexRune(image, '/'); k == -1 ||
		(!strings.ContainsAny(image[:k], ".:") && image[:k] != "localhost" && strings.ToLower(image[:k]) == image[:k]) {
		full = i.cfg.registry + "/" + image
	}
	ref, err := name.ParseReference(full, name.WeakValidation)
	if err != nil {
		return nil, fnErr("image_normalize", 1, "bad image: %s: %v", full, err)
	}
	slash := strings.IndexRune(full, '/')
	registry, rest := full[:slash], full[slash+1:]
	path := rest
	if at := strings.IndexRune(path, '@'); at != -1 {
		path = path[:at]
	}
	if colon := strings.LastIndex(path, ":"); colon != -1 && !strings.Contains(path[colon:], "/") {
		path = path[:colon]
	}
	if full != image && !i.cfg.registryMutation {
		registry = ""
	}
	base := path
	if registry != "" {
		base = registry + "/" + path
	}
	switch r := ref.(type) {
	case name.Digest:
		return base + "@" + r.DigestStr(), nil
	case name.Tag:
		tag := r.TagStr()
		if tag == "" {
			tag = "latest"
		}
		return base + ":" + tag, nil
	}
	return nil, fnErr("image_normalize", 1, "bad image: %s: unsupported reference", full)
}

// jpIsExternalURL decides from the URL text alone whether it points outside
// the cluster or the private network; it performs no DNS or other network
// I/O (upstream resolves host names, which makes the answer depend on the
// resolver and lets a policy trigger lookups). The rule:
//
//   - the text must parse as a URL with a host, otherwise it is an error;
//   - an IP literal (v4 or v6, with or without brackets or zone, and the
//     legacy IPv4 forms such as "127.1" or "0x7f000001") is internal
//     when it is loopback, private (RFC 1918 / RFC 4193), link-local,
//     unspecified, in 0.0.0.0/8 or in the shared/CGNAT range 100.64.0.0/10;
//     otherwise
//     external;
//   - a host name is internal when it is "localhost" or a single label
//     ("my-service"), or ends with .localhost, .local, .localdomain,
//     .internal, .intranet, .lan, .home.arpa, .svc, .cluster.local or
//     .svc.cluster.local; every other name is external.
func jpIsExternalURL(args []any) (any, error) {
	raw := args[0].(string)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fnWrap("is_external_url", 1, err)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fnErr("is_external_url", 1, "no host in URL %q", raw)
	}
	if k := strings.IndexByte(host, '%'); k != -1 {
		host = host[:k]
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		var ok bool
		if addr, ok = legacyIPv4(host); ok {
			err = nil
		}
	}
	if err == nil {
		addr = addr.Unmap()
		internal := addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() ||
			addr.IsLinkLocalMulticast() || addr.IsUnspecified() || addr.IsInterfaceLocalMulticast() ||
			cgnat.Contains(addr) || thisNetwork.Contains(addr)
		return !internal, nil
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || !strings.Contains(h, ".") {
		return false, nil
	}
	for _, suffix := range internalSuffixes {
		if strings.HasSuffix(h, suffix) {
			return false, nil
		}
	}
	return true, nil
}

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
)

var internalSuffixes = []string{
	".localhost", ".local", ".localdomain", ".internal", ".intranet", ".lan",
	".home.arpa", ".svc", ".cluster.local",
}

// legacyIPv4 parses the inet_aton forms resolvers also accept ("127.1",
// "0x7f.0.0.1", "017700000001", "2130706433"), so that they cannot pass for
// host names.
func legacyIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for k, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[k] = v
	}
	var ip uint64
	last := len(vals) - 1
	for k := 0; k < last; k++ {
		if vals[k] > 255 {
			return netip.Addr{}, false
		}
		ip |= vals[k] << (8 * (3 - k))
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	ip |= vals[last]
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}
