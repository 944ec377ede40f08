package images_test

import (
	"encoding/json"
	"fmt"

	"github.com/gavelpolicy/gavel/internal/images"
)

func Example() {
	pod := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"spec": map[string]any{
			"initContainers": []any{map[string]any{"name": "vault", "image": "ghcr.io/vault:v3"}},
			"containers":     []any{map[string]any{"name": "nginx", "image": "nginx"}},
		},
	}
	infos, err := images.Extract(pod, images.DefaultConfig())
	if err != nil {
		panic(err)
	}
	out, _ := json.MarshalIndent(images.Variable(infos), "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "containers": {
	//     "nginx": {
	//       "jsonPointer": "/spec/containers/0/image",
	//       "name": "nginx",
	//       "path": "nginx",
	//       "reference": "docker.io/nginx:latest",
	//       "referenceWithTag": "docker.io/nginx:latest",
	//       "registry": "docker.io",
	//       "tag": "latest"
	//     }
	//   },
	//   "initContainers": {
	//     "vault": {
	//       "jsonPointer": "/spec/initContainers/0/image",
	//       "name": "vault",
	//       "path": "vault",
	//       "reference": "ghcr.io/vault:v3",
	//       "referenceWithTag": "ghcr.io/vault:v3",
	//       "registry": "ghcr.io",
	//       "tag": "v3"
	//     }
	//   }
	// }
}

func ExampleParse() {
	for _, image := range []string{
		"nginx",
		"docker.io/library/nginx:1.25",
		"nginx@sha256:5f44022eab9198d75939d9eaa5341bc077eca16fa51d4ef32d33f1bd4c8cbe7d",
		"localhost:5000/tools/init:v1",
		"Nginx",
	} {
		info, err := images.Parse(image, images.DefaultConfig())
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s | %s | %s | %s | %q\n", info.Registry, info.Path, info.Name, info.ReferenceWithTag(), info.Digest)
	}
	// Output:
	// docker.io | nginx | nginx | docker.io/nginx:latest | ""
	// docker.io | library/nginx | nginx | docker.io/library/nginx:1.25 | ""
	// docker.io | nginx | nginx | docker.io/nginx: | "sha256:5f44022eab9198d75939d9eaa5341bc077eca16fa51d4ef32d33f1bd4c8cbe7d"
	// localhost:5000 | tools/init | init | localhost:5000/tools/init:v1 | ""
	// bad image: docker.io/Nginx, defaultRegistry: docker.io, enableDefaultRegistryMutation: true: repository name must be lowercase
}

// Custom resources declare where their images are with image extractors.
func ExampleNewExtractor() {
	x, err := images.NewExtractor(images.Config{
		DefaultRegistry:               "docker.io",
		EnableDefaultRegistryMutation: true,
		Extractors: map[string][]images.ExtractorConfig{
			"Task": {{Name: "steps", Path: "/spec/steps/*", Value: "image", Key: "name"}},
		},
	})
	if err != nil {
		panic(err)
	}
	infos, err := x.Extract(map[string]any{
		"kind": "Task",
		"spec": map[string]any{"steps": []any{map[string]any{"name": "build", "image": "golang:1.22"}}},
	})
	fmt.Println(infos["steps"]["build"], infos["steps"]["build"].Pointer, err)
	// Output: docker.io/golang:1.22 /spec/steps/0/image <nil>
}
