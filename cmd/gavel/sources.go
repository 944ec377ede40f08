package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/loader"
)

// isGitURL reports whether a path is a git repository URL, as the
// upstream CLI decides it: any http or https URL.
func isGitURL(p string) bool {
	return strings.HasPrefix(p, "https://") || strings.HasPrefix(p, "http://")
}

// gitSource is a git URL path split as the upstream CLI splits it: the
// repository is SCHEME://HOST/OWNER/REPO; without a branch flag the rest of
// the path names the branch ("main" when empty) and the whole repository
// is read, with one the rest is the folder to read.
type gitSource struct {
	repo, branch, dir string
}

func parseGitURL(raw, branch string) (gitSource, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return gitSource{}, err
	}
	elems := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(elems) < 2 || elems[0] == "" || elems[1] == "" {
		return gitSource{}, fmt.Errorf("invalid URL path %s - expected https://<any_git_source_domain>/:owner/:repository/:branch (without --git-branch flag) OR https://<any_git_source_domain>/:owner/:repository/:directory (with --git-branch flag)", u.Path)
	}
	rest := strings.Trim(strings.Join(elems[2:], "/"), "/")
	u.Path = "/" + elems[0] + "/" + elems[1]
	u.RawQuery, u.Fragment = "", ""
	s := gitSource{repo: u.String(), branch: branch, dir: "/"}
	if branch == "" {
		s.branch = rest
		if s.branch == "" {
			s.branch = "main"
		}
	} else if rest != "" {
		s.dir = "/" + rest
	}
	return s, nil
}

// gitCloneTimeout bounds a clone.
const gitCloneTimeout = 5 * time.Minute

// cloneGit clones one branch of a repository, shallow, into dir with the
// git executable (so that the user's git configuration, proxies and
// credential helpers apply). A user name or password is sent as HTTP basic
// authentication through git's environment (never on its command line, so
// that no other user sees it in the process list); git never prompts.
func cloneGit(s gitSource, dir, user, password string) error {
	ctx, cancel := context.WithTimeout(context.Background(), gitCloneTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "clone", "--quiet", "--depth", "1", "--single-branch", "--branch", s.branch, "--", s.repo, dir)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	if user != "" || password != "" {
		token := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
		cmd.Env = append(cmd.Env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic "+token)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("failed to clone repository %s (branch %s): %s", s.repo, s.branch, msg)
	}
	return nil
}

// resolvePolicyPaths clones the git URLs among the paths and returns the
// local paths to read in their place; cleanup removes the clones.
func resolvePolicyPaths(paths []string, branch, user, password string) ([]string, func(), error) {
	var dirs []string
	cleanup := func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !isGitURL(p) {
			out = append(out, p)
			continue
		}
		s, err := parseGitURL(p, branch)
		if err != nil {
			return nil, cleanup, fmt.Errorf("failed to parse URL (%w)", err)
		}
		dir, err := os.MkdirTemp("", "gavel-git-*")
		if err != nil {
			return nil, cleanup, err
		}
		dirs = append(dirs, dir)
		if err := cloneGit(s, dir, user, password); err != nil {
			return nil, cleanup, err
		}
		local := filepath.Join(dir, filepath.FromSlash(s.dir))
		if rel, err := filepath.Rel(dir, local); err != nil || strings.HasPrefix(rel, "..") {
			return nil, cleanup, fmt.Errorf("%s: path outside the repository", p)
		}
		if _, err := os.Stat(local); err != nil {
			return nil, cleanup, fmt.Errorf("%s: no %s in the repository", p, s.dir)
		}
		out = append(out, local)
	}
	return out, cleanup, nil
}

// readCRDs reads the --crd-path files: each must hold
// CustomResourceDefinitions only. gavel evaluates custom kinds without
// their schema; the definitions name the resources of custom kinds for
// the CEL resource library.
func readCRDs(paths []string) ([]map[string]any, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	files, err := loader.Files(paths...)
	if err != nil {
		return nil, err
	}
	var crds []map[string]any
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		docs, err := api.ReadDocuments(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if d.Kind() != "CustomResourceDefinition" {
				return nil, fmt.Errorf("%s: a %s is not a CustomResourceDefinition", name, d.Kind())
			}
			crds = append(crds, d.Object)
		}
	}
	return crds, nil
}
