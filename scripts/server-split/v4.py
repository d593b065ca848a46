exec(open('/tmp/splitwork/v3.py').read())
put('cmds','forwardReq','forwardReq.encode','forwardReq.spool','decodeForward','scanReq','scanReq.encode','decodeScan','scanResp','scanResp.encode','decodeScanResp')
