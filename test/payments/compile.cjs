// Compiles contracts/TestUSDC.sol with solc-js into build/TestUSDC.json
// ({abi, bytecode}). evmVersion london: every local chain runs it.
const fs = require("fs");
const path = require("path");
const solc = require("solc");

const src = fs.readFileSync(path.join(__dirname, "contracts", "TestUSDC.sol"), "utf8");
const input = {
  language: "Solidity",
  sources: { "TestUSDC.sol": { content: src } },
  settings: { evmVersion: "london", optimizer: { enabled: true, runs: 200 },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (out.errors || []).filter((e) => e.severity === "error");
if (errors.length) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
const c = out.contracts["TestUSDC.sol"].TestUSDC;
fs.mkdirSync(path.join(__dirname, "build"), { recursive: true });
fs.writeFileSync(path.join(__dirname, "build", "TestUSDC.json"),
  JSON.stringify({ abi: c.abi, bytecode: "0x" + c.evm.bytecode.object }));
console.log("compiled TestUSDC");
