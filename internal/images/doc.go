// Package images computes the `images` variable of Kyverno rules: the
// registry, path, name, tag and digest of every container image of a
// resource, keyed by container kind and container name.
//
//	infos, err := images.Extract(pod, images.DefaultConfig())
//	ctx["images"] = images.Variable(infos)
//	// {{ images.containers.nginx.registry }} -> "docker.io"
//
// # Where images are found
//
// As upstream: for a Pod under spec, for DaemonSet, Deployment, Job,
// ReplicaSet, ReplicationController and StatefulSet under
// spec.template.spec, for CronJob under spec.jobTemplate.spec.template.spec,
// in the initContainers, containers and ephemeralContainers lists, keyed by
// the container name. Other kinds have no images unless the rule declares
// image extractors (Config.Extractors), which then replace the built-in ones
// for their kind.
//
// # How references are read
//
// Exactly as upstream, which is not how container runtimes normalize names:
//   - an image without a registry gets Config.DefaultRegistry ("docker.io"),
//     without scheme; the first path element is a registry when it contains
//     '.' or ':', is "localhost", or has upper-case letters;
//   - the path is what the image says: "nginx" has path "nginx", not
//     "library/nginx", while "docker.io/library/nginx" keeps "library/nginx";
//   - an image with neither tag nor digest gets tag "latest"; an image with a
//     digest and no tag has an empty tag (so referenceWithTag ends in ':');
//   - with EnableDefaultRegistryMutation off, an image that had no registry
//     reports an empty registry, and its references have none either.
//
// Parsing follows the grammar of the distribution project's reference
// package (the one upstream uses), including its error messages. It is
// implemented here rather than with go-containerregistry's pkg/name, whose
// normalization (index.docker.io, library/ for single names) and looser
// validation give different results.
package images
