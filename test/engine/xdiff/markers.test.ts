import { describe, expect, test } from "bun:test";
import { findMarkerBlocks } from "../../../src/engine/merge/xdiff/index.ts";

const lines = (...ls: string[]) => ls.join("\n") + "\n";

describe("findMarkerBlocks", () => {
  test("no markers", () => {
    expect(findMarkerBlocks("")).toEqual([]);
    expect(findMarkerBlocks("a\nb\n")).toEqual([]);
  });

  test("a complete block", () => {
    expect(findMarkerBlocks(lines("x", "<<<<<<< local", "a", "=======", "b", ">>>>>>> accepted", "y"))).toEqual([
      { start: 2, end: 6 },
    ]);
  });

  test("bare markers without labels", () => {
    expect(findMarkerBlocks(lines("<<<<<<<", "=======", ">>>>>>>"))).toEqual([{ start: 1, end: 3 }]);
  });

  test("a diff3 block with a base section", () => {
    expect(
      findMarkerBlocks(lines("<<<<<<< ours", "a", "||||||| base", "o", "=======", "b", ">>>>>>> theirs")),
    ).toEqual([{ start: 1, end: 7 }]);
  });

  test("incomplete blocks are not reported", () => {
    expect(findMarkerBlocks(lines("<<<<<<< local", "a", "=======", "b"))).toEqual([]);
    expect(findMarkerBlocks(lines("<<<<<<< local", "a", ">>>>>>> accepted"))).toEqual([]);
    expect(findMarkerBlocks(lines("=======", ">>>>>>> accepted"))).toEqual([]);
  });

  test("CRLF line endings and a missing final newline", () => {
    expect(findMarkerBlocks("<<<<<<< local\r\na\r\n=======\r\nb\r\n>>>>>>> accepted\r\n")).toEqual([{ start: 1, end: 5 }]);
    expect(findMarkerBlocks("<<<<<<< local\na\n=======\nb\n>>>>>>> accepted")).toEqual([{ start: 1, end: 5 }]);
  });

  test("markers must be exactly seven characters, then end of line or a space", () => {
    expect(findMarkerBlocks(lines("<<<<<<<< local", "=======", ">>>>>>> accepted"))).toEqual([]);
    expect(findMarkerBlocks(lines("<<<<<<<local", "=======", ">>>>>>> accepted"))).toEqual([]);
    expect(findMarkerBlocks(lines("<<<<<<< local", "======= x", ">>>>>>> accepted"))).toEqual([]);
    expect(findMarkerBlocks(lines("<<<<<<< local", "========", ">>>>>>> accepted"))).toEqual([]);
    expect(findMarkerBlocks(lines("<<<<<<< local", "=======", ">>>>>>>> accepted"))).toEqual([]);
    expect(findMarkerBlocks(lines(" <<<<<<< local", "=======", ">>>>>>> accepted"))).toEqual([]);
  });

  test("several blocks, and an unfinished block followed by a complete one", () => {
    const text = lines(
      "<<<<<<< local", // 1
      "a", // 2
      "=======", // 3
      "b", // 4
      ">>>>>>> accepted", // 5
      "mid", // 6
      "<<<<<<< dangling", // 7
      "c", // 8
      "<<<<<<< local", // 9
      "=======", // 10
      ">>>>>>> accepted", // 11
    );
    expect(findMarkerBlocks(text)).toEqual([
      { start: 1, end: 5 },
      { start: 9, end: 11 },
    ]);
  });
});
