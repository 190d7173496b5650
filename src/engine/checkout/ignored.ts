/**
 * Files no agent means to share (docs/decisions/0018-files-no-agent-means-to-share.md):
 * what the scan leaves out of the notebook. The notebook's `.gitignore`
 * files, with git's rules (patterns/ignore.ts), over a built-in list of
 * editor and OS files; but never a file the notebook holds, nor the
 * notebook's own rule files, so a rule can stop only new files, and no
 * rule can hide the file that would undo it.
 */
import type { FlatTree } from "../git/object-cache.ts";
import { ATTRIBUTES_FILE } from "../patterns/attributes.ts";
import { IGNORE_FILE, IgnoreRules } from "../patterns/ignore.ts";

/**
 * Ignored with no `.gitignore`, at the lowest precedence (a `.gitignore`
 * line `!.DS_Store` publishes them again): vim's swap files, macOS's and
 * Windows's folder files, Emacs's lock links. Not Emacs's `name~`
 * backups: a conflict's side file is named `path~local~` when
 * `path~local` is taken (merge/tree-merge.ts), and a backup rule cannot
 * tell one from the other. A backup is text, so it blocks nothing.
 */
export const BUILT_IN_IGNORES = ["*.swp", "*.swo", ".DS_Store", "Thumbs.db", ".#*"] as const;

/** The rules in force at the notebook's root before its own `.gitignore`. */
export function builtInRules(): IgnoreRules {
  return IgnoreRules.base(`${BUILT_IN_IGNORES.join("\n")}\n`);
}

/** Names no rule hides: the files that hold the rules. */
const RULE_FILES = new Set([IGNORE_FILE, ATTRIBUTES_FILE]);

export function isRuleFile(name: string): boolean {
  return RULE_FILES.has(name);
}

/**
 * The paths the notebook holds — no rule hides them — and the directories
 * above them. Asked only about entries a rule names, so the directories
 * are gathered on the first such question.
 */
export class HeldPaths {
  private readonly trees: ReadonlyArray<FlatTree>;
  private dirs: Set<string> | null = null;

  constructor(...trees: ReadonlyArray<FlatTree>) {
    this.trees = trees;
  }

  has(path: string): boolean {
    return this.trees.some((tree) => tree.has(path));
  }

  /** Whether a held file is below directory `dir` ("a/b"). */
  holdsBelow(dir: string): boolean {
    if (this.dirs === null) {
      this.dirs = new Set();
      for (const tree of this.trees) {
        for (const path of tree.keys()) for (let i = path.indexOf("/"); i >= 0; i = path.indexOf("/", i + 1)) this.dirs.add(path.slice(0, i));
      }
    }
    return this.dirs.has(dir);
  }

  /** Whether one of `ignored` (files, and directories with a trailing slash, as a scan lists them) is held. */
  holdsAnyOf(ignored: readonly string[]): boolean {
    return ignored.some((p) => (p.endsWith("/") ? this.holdsBelow(p.slice(0, -1)) : this.has(p)));
  }
}

export const NOTHING_HELD = new HeldPaths();
