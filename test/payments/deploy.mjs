// Deploys TestUSDC (build/TestUSDC.json, from compile.cjs) to the chain at
// RPC_URL with the deployer key, mints MINT atomic units to each address in
// MINT_TO (comma separated), and prints {"token": address, "chainId": n}.
import fs from "node:fs";
import { createPublicClient, createWalletClient, http, defineChain } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const { RPC_URL, DEPLOYER_KEY, MINT_TO = "", MINT = "1000000000", TOKEN_NAME = "USD Coin", TOKEN_VERSION = "2" } = process.env;
const { abi, bytecode } = JSON.parse(fs.readFileSync(new URL("./build/TestUSDC.json", import.meta.url)));
const pub = createPublicClient({ transport: http(RPC_URL) });
const chainId = await pub.getChainId();
const chain = defineChain({ id: chainId, name: "local", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [RPC_URL] } } });
const wallet = createWalletClient({ account: privateKeyToAccount(DEPLOYER_KEY), chain, transport: http(RPC_URL) });
const hash = await wallet.deployContract({ abi, bytecode, args: [TOKEN_NAME, TOKEN_VERSION] });
const receipt = await pub.waitForTransactionReceipt({ hash });
const token = receipt.contractAddress;
for (const to of MINT_TO.split(",").filter(Boolean)) {
  const h = await wallet.writeContract({ address: token, abi, functionName: "mint", args: [to, BigInt(MINT)] });
  await pub.waitForTransactionReceipt({ hash: h });
}
console.log(JSON.stringify({ token, chainId }));
