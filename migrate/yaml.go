package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// WriteYAML writes the outputs of a conversion as YAML documents, with
// comments where a construct was rewritten.
func (c *Conversion) WriteYAML(w io.Writer) error {
	for i, o := range c.Outputs {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		data, err := o.yaml(c)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// yaml renders one output.
func (o *Output) yaml(c *Conversion) ([]byte, error) {
	raw, err := json.Marshal(o.Object)
	if err != nil {
		return nil, err
	}
	var m any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	prune(m)
	var doc yaml.Node
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	header := fmt.Sprintf("converted from %s %s by gavel migrate", c.Kind, c.Name)
	if c.Namespace != "" {
		header = fmt.Sprintf("converted from %s %s/%s by gavel migrate", c.Kind, c.Namespace, c.Name)
	}
	if len(o.Rules) > 0 {
		header += "\nrules: " + strings.Join(o.Rules, ", ")
	}
	root.HeadComment = header
	decorate(root, "", o.comments)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// prune drops the empty values the API types write (a creationTimestamp
// of null, empty status).
func prune(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		if l, ok := v.([]any); ok {
			for _, x := range l {
				prune(x)
			}
		}
		return
	}
	for k, x := range m {
		prune(x)
		switch t := x.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			if len(t) == 0 {
				delete(m, k)
			}
		}
	}
}

// decorate attaches the comments to the nodes by path and writes long or
// multi-line strings as literal blocks.
func decorate(n *yaml.Node, path string, comments map[string]string) {
	n.Style = 0
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			k.Style = 0
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if c, ok := comments[p]; ok {
				k.HeadComment = c
			}
			decorate(v, p, comments)
		}
	case yaml.SequenceNode:
		for i, x := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			if c, ok := comments[p]; ok {
				x.HeadComment = c
			}
			decorate(x, p, comments)
		}
	case yaml.ScalarNode:
		switch {
		case n.Tag != "!!str":
		case strings.Contains(n.Value, "\n") || len(n.Value) > 100:
			n.Style = yaml.LiteralStyle
		case strings.Contains(n.Value, "'") && !strings.Contains(n.Value, `"`):
			n.Style = yaml.DoubleQuotedStyle
		case strings.Contains(n.Value, "'"):
			n.Style = yaml.LiteralStyle
		}
	}
}
