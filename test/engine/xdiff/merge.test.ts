/*
 * Hand-written merges whose expected outputs were taken from
 * `git merge-file -p -L local -L baseline -L accepted ours base theirs` (git 2.39.5).
 */

import { describe, expect, test } from "bun:test";
import { MARKER_LABELS, mergeText } from "../../../src/engine/merge/xdiff/index.ts";

describe("mergeText: hand-written cases confirmed with git", () => {
  test("labels", () => {
    expect(MARKER_LABELS).toEqual({ ours: "local", theirs: "accepted" });
  });

  test("different hunks merge cleanly", () => {
    expect(mergeText("a\nb\nc\nd\ne\nf\ng\n", "a\nB\nc\nd\ne\nf\ng\n", "a\nb\nc\nd\ne\nF\ng\n")).toEqual({
      text: "a\nB\nc\nd\ne\nF\ng\n",
      conflicts: [],
    });
  });

  test("same line changed differently conflicts", () => {
    expect(mergeText("a\nb\nc\n", "a\nB\nc\n", "a\nX\nc\n")).toEqual({
      text: "a\n<<<<<<< local\nB\n=======\nX\n>>>>>>> accepted\nc\n",
      conflicts: [{ start: 2, end: 6 }],
    });
  });

  test("adjacent hunks conflict and are shown together", () => {
    expect(mergeText("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n")).toEqual({
      text: "a\n<<<<<<< local\nB\nc\n=======\nb\nC\n>>>>>>> accepted\n",
      conflicts: [{ start: 2, end: 8 }],
    });
  });

  test("conflicts within three lines of each other become one", () => {
    expect(
      mergeText("one\ntwo\nthree\nfour\nfive\nsix\n", "one\n2\nthree\nfour\nfive\n6\n", "one\nII\nthree\nfour\nfive\nVI\n"),
    ).toEqual({
      text: "one\n<<<<<<< local\n2\nthree\nfour\nfive\n6\n=======\nII\nthree\nfour\nfive\nVI\n>>>>>>> accepted\n",
      conflicts: [{ start: 2, end: 14 }],
    });
  });

  test("identical lines at the edges of a conflict are taken out of it", () => {
    expect(mergeText("a\nb\nc\n", "a\nX\nY\nZ\nc\n", "a\nX\nQ\nZ\nc\n")).toEqual({
      text: "a\nX\n<<<<<<< local\nY\n=======\nQ\n>>>>>>> accepted\nZ\nc\n",
      conflicts: [{ start: 3, end: 7 }],
    });
  });

  test("CRLF files get CRLF markers", () => {
    expect(mergeText("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n", "a\r\nX\r\nc\r\n")).toEqual({
      text: "a\r\n<<<<<<< local\r\nB\r\n=======\r\nX\r\n>>>>>>> accepted\r\nc\r\n",
      conflicts: [{ start: 2, end: 6 }],
    });
  });

  test("a conflicting last line without newline gets one inside the block", () => {
    expect(mergeText("a\nb\nc", "a\nb\nB", "a\nb\nX")).toEqual({
      text: "a\nb\n<<<<<<< local\nB\n=======\nX\n>>>>>>> accepted\n",
      conflicts: [{ start: 3, end: 7 }],
    });
  });

  test("an unchanged side yields the other side verbatim", () => {
    expect(mergeText("a\nb\n", "a\nb\n", "x\r\ny")).toEqual({ text: "x\r\ny", conflicts: [] });
    expect(mergeText("a\nb\n", "", "a\nb\n")).toEqual({ text: "", conflicts: [] });
  });
});
