#!/usr/bin/env bash
# Print the path of GitHub's public GraphQL schema (npm package @octokit/graphql-schema), installing it
# into .cache/graphql-schema the first time. Used by tests/test_github.py to validate our queries.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$root/.cache/graphql-schema"
schema="$prefix/node_modules/@octokit/graphql-schema/schema.graphql"
if [ ! -s "$schema" ]; then
  command -v npm >/dev/null || { echo "npm not found" >&2; exit 3; }
  mkdir -p "$prefix"
  npm install --silent --no-save --no-audit --no-fund --prefix "$prefix" @octokit/graphql-schema >&2
fi
echo "$schema"
